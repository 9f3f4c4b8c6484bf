from __future__ import annotations

import random
import re
import time

import pytest
import regex

from tomori.delivery.chunking import (
    HARD_LIMIT,
    MESSAGE_LIMIT,
    Splitter,
    protected_spans,
    settled_end,
    split_message,
    stable_end,
)
from tomori.delivery.segmenter import Segmenter

URL = "https://example.com/a/very/long/path?with=query&and=more#fragment"
EMOJI = "<:tomori_wave:123456789012345678>"
LINK = "[the docs](https://docs.example.com/page)"
MENTION = "<@123456789012345678>"


def test_short_text_is_one_message() -> None:
    assert split_message("hello") == ["hello"]


def test_a_long_text_is_cut_at_paragraph_ends_first() -> None:
    paragraph = ("word " * 150).strip()
    text = f"{paragraph}\n\n{paragraph}\n\n{paragraph}"
    pieces = split_message(text)
    assert all(len(piece) <= MESSAGE_LIMIT for piece in pieces)
    assert "".join(pieces) == text
    assert pieces[0].endswith("\n\n")


@pytest.mark.parametrize("token", [URL, EMOJI, LINK, MENTION, "`inline code here`"])
def test_protected_spans_are_never_split(token: str) -> None:
    for offset in range(-len(token), 2):
        filler = "x" * (MESSAGE_LIMIT + offset)
        text = f"{filler[:-1]} {token} tail"
        pieces = split_message(text)
        assert all(len(piece) <= MESSAGE_LIMIT for piece in pieces)
        assert "".join(pieces) == text
        assert any(token in piece for piece in pieces), (offset, pieces)


def test_a_code_block_that_fits_is_kept_whole() -> None:
    code = "```python\n" + "print('hi')\n" * 50 + "```"
    text = "a" * 1500 + "\n" + code
    pieces = split_message(text)
    assert code in pieces[-1]


def test_an_oversized_code_block_repeats_its_fence_and_language() -> None:
    code = "```python\n" + "".join(f"line_{n} = {n}\n" for n in range(400)) + "```"
    pieces = split_message(code)
    assert len(pieces) > 1
    for piece in pieces:
        assert len(piece) <= MESSAGE_LIMIT
        assert piece.startswith("```python\n")
        assert piece.endswith("```")
    body = "".join(piece.removeprefix("```python\n").removesuffix("```") for piece in pieces)
    assert body.replace("\n", "") == code.removeprefix("```python\n").removesuffix("```").replace(
        "\n", ""
    )


def test_a_word_longer_than_a_message_is_cut_hard() -> None:
    pieces = split_message("z" * 5000)
    assert [len(piece) for piece in pieces] == [1950, 1950, 1100]


def test_random_texts_always_fit_and_lose_nothing_outside_code() -> None:
    rng = random.Random(7)
    words = ["a", "word", "longer-word", URL, EMOJI, LINK, MENTION, "\n", "\n\n", "`x`"]
    for _ in range(200):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 1200)))
        pieces = split_message(text)
        assert all(len(piece) <= MESSAGE_LIMIT for piece in pieces)
        assert "".join(pieces) == text


def feed_all(segmenter: Segmenter, text: str, step: int = 7) -> list[str]:
    out: list[str] = []
    for at in range(0, len(text), step):
        out += segmenter.feed(text[at : at + step])
    return out


def test_paragraphs_are_released_as_they_complete() -> None:
    segmenter = Segmenter()
    assert segmenter.feed("First paragraph.\n") == []
    assert segmenter.feed("\nSecond") == ["First paragraph.\n\n"]
    assert segmenter.finish() == ["Second"]


def test_a_code_block_is_released_when_it_closes_and_never_inside() -> None:
    segmenter = Segmenter()
    text = "Here:\n```py\nx = 1\n\ny = 2\n```\nDone."
    released = feed_all(segmenter, text)
    assert released == ["Here:\n```py\nx = 1\n\ny = 2\n```\n"]
    assert segmenter.finish() == ["Done."]


def test_an_unclosed_code_block_is_closed_at_the_end() -> None:
    segmenter = Segmenter()
    assert feed_all(segmenter, "```js\nlet a = 1;\n") == []
    assert segmenter.finish() == ["```js\nlet a = 1;\n```"]


def test_many_lines_without_a_paragraph_end_flush_at_the_soft_limit() -> None:
    segmenter = Segmenter()
    text = "".join(f"- item number {n}\n" for n in range(200))
    released = feed_all(segmenter, text) + segmenter.finish()
    assert len(released) > 1
    assert all(len(piece) <= MESSAGE_LIMIT for piece in released)
    assert "".join(released) == text


def test_a_streamed_oversized_code_block_is_split_into_valid_blocks() -> None:
    segmenter = Segmenter()
    text = "```py\n" + "".join(f"value_{n} = {n} * 2\n" for n in range(300)) + "```\n"
    released = feed_all(segmenter, text, step=13) + segmenter.finish()
    assert len(released) > 1
    for piece in released:
        assert len(piece) <= MESSAGE_LIMIT
        assert piece.startswith("```py\n")
        assert piece.rstrip("\n").endswith("```")
    lines = [line for piece in released for line in piece.splitlines() if "value_" in line]
    assert lines == [f"value_{n} = {n} * 2" for n in range(300)]


def test_a_long_line_without_newlines_is_cut_safely_while_streaming() -> None:
    segmenter = Segmenter()
    text = " ".join([URL] * 120)
    released = feed_all(segmenter, text, step=50) + segmenter.finish()
    assert all(len(piece) <= MESSAGE_LIMIT for piece in released)
    assert "".join(released) == text
    assert all(re.fullmatch(rf"( ?{re.escape(URL)})+ ?", piece) for piece in released)


def test_an_answer_ending_on_its_closing_fence_without_a_newline_is_not_closed_twice() -> None:
    segmenter = Segmenter()
    text = "Code:\n```py\nx = 1\n```"
    assert feed_all(segmenter, text, step=3) + segmenter.finish() == [text]


def test_a_line_holding_a_whole_snippet_is_not_a_fence() -> None:
    segmenter = Segmenter()
    text = "```npm i``` installs it.\n\nThen run it."
    released = feed_all(segmenter, text, step=4) + segmenter.finish()
    assert released == ["```npm i``` installs it.\n\n", "Then run it."]


@pytest.mark.parametrize(
    "cluster",
    [
        "\U0001f44d\U0001f3fd",  # thumbs up with a skin tone
        "\U0001f469\u200d\U0001f4bb",  # a woman technologist (ZWJ)
        "\U0001f1ef\U0001f1f5",  # a flag
        "e\u0301",  # a letter and its combining accent
    ],
)
def test_a_hard_cut_falls_between_grapheme_clusters(cluster: str) -> None:
    for lead in range(4):
        text = "x" * lead + cluster * (4_000 // len(cluster))
        pieces = split_message(text)
        assert "".join(pieces) == text
        for piece in pieces:
            assert len(piece) <= MESSAGE_LIMIT
            assert set(regex.findall(r"\X", piece)) <= {"x", cluster}


def test_a_span_that_fits_one_message_may_use_up_to_discords_limit() -> None:
    url = "https://example.com/" + "p" * 1_975
    pieces = split_message(f"see {url} end")
    assert url in pieces
    assert max(len(piece) for piece in pieces) <= HARD_LIMIT
    longer = "https://example.com/" + "p" * 2_100
    assert all(len(piece) <= MESSAGE_LIMIT for piece in split_message(longer))


@pytest.mark.slow  # times long texts
def test_splitting_is_linear_in_the_texts_length() -> None:
    unit = "Prose with https://example.com/x and `code`.\n\n```py\nprint(1)\n```\n\n"

    def cost(size: int) -> float:
        text = (unit * (size // len(unit) + 1))[:size]
        started = time.perf_counter()
        split_message(text)
        segmenter = Segmenter()
        segmenter.feed(text)
        segmenter.finish()
        return time.perf_counter() - started

    small = min(cost(50_000) for _ in range(3))
    large = min(cost(500_000) for _ in range(3))
    assert large / small < 40  # linear is about 10; the old quadratic cut was about 100


def test_one_huge_line_of_prose_is_split_in_linear_time() -> None:
    def cost(size: int) -> float:
        text = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
        started = time.perf_counter()
        split_message(text)
        Segmenter().feed(text)
        return time.perf_counter() - started

    small = min(cost(100_000) for _ in range(3))
    large = min(cost(800_000) for _ in range(3))
    assert large / small < 32  # linear is about 8; reading each cut's whole line gave ~64


def test_a_splitter_cuts_no_more_pieces_than_it_is_asked_for() -> None:
    text = "lorem ipsum dolor sit amet " * 10_000
    pieces = Splitter(text).pieces(most=3)
    assert len(pieces) == 3
    assert all(len(piece) <= MESSAGE_LIMIT for piece in pieces[:2])
    assert "".join(pieces) == text


def test_the_segmenter_cuts_no_more_segments_than_its_reader_wants() -> None:
    prose = "lorem ipsum dolor sit amet " * 10_000
    paragraphs = "A paragraph.\n\n" * 10_000
    for text in (prose, paragraphs, f"```py\n{'x = 1\n' * 10_000}```\n"):
        segments = Segmenter(wanted=3).feed(text)
        assert len(segments) <= 4
        assert all(len(segment) <= MESSAGE_LIMIT for segment in segments[:3])


def test_a_grapheme_cluster_that_may_go_on_is_held_in_a_growing_message() -> None:
    assert stable_end("Hi \U0001f469\u200d") == 3
    assert stable_end("a flag \U0001f1ef") == 7
    assert stable_end("plain text") == len("plain text")


def test_a_mark_whose_opener_a_url_took_is_held_as_the_start_of_a_span() -> None:
    """The URL swallows the first "**", so the second opens bold that more text may close
    (as `protected_spans` reads it): a growing message must not show past it yet."""
    text = "See https://example.com/page**bold words**"
    assert stable_end(text) == len(text) - 2
    closed = text + "https://example.com/other**"
    spans = [closed[span.start : span.end] for span in protected_spans(closed)]
    assert spans[-1] == "**https://example.com/other**"
    assert stable_end("Some **bold words** here") == len("Some **bold words** here")


def test_edit_mode_holds_inline_code_by_the_same_rule_as_the_capture() -> None:
    # a lone backtick holds only from itself: the line before it can be shown
    assert stable_end("Press the ` key. Then more words") == len("Press the ")
    # a closed one-line snippet is inline code, not a fence still being written
    assert stable_end("```npm i``` installs it and more") == len("```npm i``` installs it and more")
    assert stable_end("```py") == 0  # a fence line: held until its line ends


@pytest.mark.parametrize(
    ("text", "shown", "kept"),
    [
        ("We walked through", "We walked throug", "We walked through"),
        ("We walked through the doo", "We walked throug", "We walked through the "),
        ("Done.\nWe walked through", "Done.\n", "Done.\n"),
        ("Done.\nWe walked", "Done.\nWe ", "Done.\nWe "),
        ("See [the docs](https://exa", "See ", "See "),
        ("Run `npm i` to install it, or `yarn", "Run `npm i` to install it, or ", None),
        ("First.\nSecond.\nThird in hal", "First.\nSec", "First.\nSecond.\n"),
    ],
)
def test_a_stream_stopped_early_leaves_a_growing_message_at_a_whole_word(
    text: str, shown: str, kept: str | None
) -> None:
    """What edit mode shows once the stream stopped: the complete lines, and where part of the
    next line is shown already, that line up to a whole word, never a span left open."""
    assert text[: settled_end(text, len(shown))] == (shown if kept is None else kept)
