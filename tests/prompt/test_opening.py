"""The posted answer begins with the prefill exactly once, whatever the model wrote and however
its stream was cut into chunks."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from tomori.prompt.opening import Opening, opened
from tomori.prompt.prefill import Prefill

PREFILL = "Tomori: Well,"
ALPHABET = st.sampled_from(list("Tomri: Wel,ox \n"))
"""Letters of the prefill and a few others, so echoes, partial echoes and near misses abound."""
prefills = st.text(ALPHABET, min_size=1, max_size=8).map(str.strip).filter(bool)
texts = st.text(ALPHABET, max_size=30)


def streamed(prefill: str, text: str, cuts: list[int], opening: Opening | None = None) -> str:
    """`text` cut at `cuts` and read as one pass reads it."""
    reader = (opening or Opening(Prefill(prefill))).reader()
    bounds = sorted({0, len(text), *(cut % (len(text) + 1) for cut in cuts)})
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    return "".join(reader.feed(chunk) for chunk in chunks) + reader.finish()


@given(prefills, texts, st.lists(st.integers(0, 60), max_size=8))
def test_the_answer_is_the_same_whatever_the_chunks(
    prefill: str, text: str, cuts: list[int]
) -> None:
    assert streamed(prefill, text, cuts) == opened(prefill, text)


@given(prefills, texts, st.lists(st.integers(0, 60), max_size=8), st.booleans())
def test_the_answer_begins_with_the_prefill_once_echoed_or_not(
    prefill: str, text: str, cuts: list[int], echoed: bool
) -> None:
    written = prefill + text if echoed else text
    answer = streamed(prefill, written, cuts)
    if not written.strip():
        assert answer == ""
        return
    assert answer.startswith(prefill)
    if echoed or not text.lstrip().startswith(prefill):
        assert answer == prefill + text  # the echo stripped, or the prefill put before it


def test_an_echo_is_posted_as_written_and_a_continuation_after_the_prefill() -> None:
    assert opened(PREFILL, "Tomori: Well, hello") == "Tomori: Well, hello"
    assert opened(PREFILL, "\n Tomori: Well, hello") == "Tomori: Well, hello"
    assert opened(PREFILL, " hello") == "Tomori: Well, hello"
    assert opened(PREFILL, "Tomori: Wel") == "Tomori: Well,Tomori: Wel"  # stopped short: no echo
    assert opened(PREFILL, "  ") == ""


def test_once_begun_later_passes_go_on_without_it() -> None:
    opening = Opening(Prefill(PREFILL))
    assert streamed(PREFILL, " first", [2], opening) == "Tomori: Well, first"
    assert opening.begun
    assert streamed(PREFILL, "Tomori: Well, again", [3], opening) == "Tomori: Well, again"
    assert streamed(PREFILL, " second", [], opening) == " second"


def test_a_pass_that_wrote_nothing_leaves_the_answer_unbegun() -> None:
    opening = Opening(Prefill(PREFILL))
    assert streamed(PREFILL, " \n", [1], opening) == ""
    assert not opening.begun
    assert streamed(PREFILL, " after the tool", [], opening) == "Tomori: Well, after the tool"
