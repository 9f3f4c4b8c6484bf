from __future__ import annotations

import pytest

from tomori.hidden import HiddenBlocks


def run(text: str, step: int) -> tuple[str, str]:
    blocks = HiddenBlocks()
    visible, hidden = [], []
    for at in range(0, len(text), step):
        shown, captured = blocks.feed(text[at : at + step])
        visible.append(shown)
        hidden.append(captured)
    shown, captured = blocks.finish()
    return "".join([*visible, shown]), "".join([*hidden, captured])


CASES = [
    ("<think>I reason</think>\n\nThe answer.", "\n\nThe answer.", "I reason"),
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


@pytest.mark.parametrize(("text", "visible", "hidden"), CASES)
@pytest.mark.parametrize("step", [1, 2, 3, 7, 1000])
def test_blocks_in_prose_are_captured_whatever_the_chunking(
    text: str, visible: str, hidden: str, step: int
) -> None:
    assert run(text, step) == (visible, hidden)
