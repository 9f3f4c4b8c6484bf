from __future__ import annotations

import time

import pytest

from tests.support.passes import Harness, budgets
from tests.support.scripted import ScriptedProvider, text
from tomori.delivery.hidden import HiddenBlocks
from tomori.generation.results import StreamStatus


def run(answer: str, step: int) -> tuple[str, str]:
    blocks = HiddenBlocks()
    visible, hidden = [], []
    for at in range(0, len(answer), step):
        shown, captured = blocks.feed(answer[at : at + step])
        visible.append(shown)
        hidden.append(captured)
    shown, captured = blocks.finish()
    return "".join([*visible, shown]), "".join([*hidden, captured])


CASES = [
    ("<think>I reason</think>\n\nThe answer.", "The answer.", "I reason"),
    (
        "Hi <DETAILS class='x'><summary>S</summary>body</details> there",
        "Hi  there",
        "<summary>S</summary>body",
    ),
    ("Use `<details>` for it.", "Use `<details>` for it.", ""),
    ("```html\n<details>\n</details>\n```\nok", "```html\n<details>\n</details>\n```\nok", ""),
    ("```npm i``` <think>x</think> y", "```npm i```  y", "x"),
    ("<think>a<think>b</think>c</think>d", "d", "a<think>b</think>c"),
    ("a < b and c<d", "a < b and c<d", ""),
    ("A <details> never closed", "A <details> never closed", ""),
    ("<think>cut off by the token limit", "", "cut off by the token limit"),
]


@pytest.mark.parametrize(("answer", "visible", "hidden"), CASES)
@pytest.mark.parametrize("step", [1, 2, 3, 7, 1000])
def test_blocks_in_prose_are_captured_whatever_the_chunking(
    answer: str, visible: str, hidden: str, step: int
) -> None:
    assert run(answer, step) == (visible, hidden)


async def test_an_answer_that_is_only_hidden_text_is_an_empty_answer(harness: Harness) -> None:
    provider = ScriptedProvider(
        [text("<thi"), text("nk>Only reasoning, "), text("no answer.</think>\n\n")]
    )
    run = await harness.run(provider, budgets())
    assert run.result is not None
    assert run.result.status is StreamStatus.EMPTY_RESPONSE
    assert run.result.details == "Only reasoning, no answer."
    assert run.channel.messages == []


def test_capturing_is_linear_in_the_texts_length() -> None:
    unit = "Prose with `code`, <b>tags</b> and <think>reasoning</think> bits.\n"

    def cost(size: int) -> float:
        blocks = HiddenBlocks()
        answer = (unit * (size // len(unit) + 1))[:size]
        started = time.perf_counter()
        blocks.feed(answer)
        blocks.finish()
        return time.perf_counter() - started

    small = min(cost(50_000) for _ in range(3))
    large = min(cost(500_000) for _ in range(3))
    assert large / small < 40  # linear is about 10
