"""Show that cutting text into messages is linear in the text's length.

Run: `.venv/bin/python bench/splitting_bench.py` (a few seconds).

One chunk of 100 KB and one of 1 MB (prose with paragraphs, URLs, inline code, a code block,
emoji and hidden blocks) go through `split_message`, the streaming `Segmenter` and the
`HiddenBlocks` capture in one feed, the worst case for a model that sends a huge chunk.
Linear cost gives a ratio near 10 for 10x the text; the old splitter, which re-scanned the
rest of the text at every cut, gave about 100.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tomori.chunking import Segmenter, split_message
from tomori.hidden import HiddenBlocks

UNIT = (
    "Some prose with a https://example.com/path?q=1 link, `inline code` and 👍🏽 emoji.\n"
    "A second line of the paragraph, long enough to matter in a message.\n\n"
    "```py\nfor n in range(10):\n    print(n)\n```\n\n"
    "<think>Some reasoning with a <b>tag</b> in it.</think> The rest.\n\n"
)


def text_of(size: int) -> str:
    return (UNIT * (size // len(UNIT) + 1))[:size]


def best_of(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def segment(text: str) -> list[str]:
    segmenter = Segmenter()
    return segmenter.feed(text) + segmenter.finish()


def hide(text: str) -> list[str]:
    blocks = HiddenBlocks()
    return [blocks.feed(text)[0], blocks.finish()[0]]


def main() -> None:
    small, large = text_of(100_000), text_of(1_000_000)
    cutters: list[tuple[str, Callable[[str], list[str]]]] = [
        ("split_message", split_message),
        ("Segmenter", segment),
        ("HiddenBlocks", hide),
    ]
    for name, cut in cutters:
        one = best_of(3, partial(cut, small))
        ten = best_of(3, partial(cut, large))
        figures = f"100 KB {one * 1000:.1f} ms, 1 MB {ten * 1000:.1f} ms"
        print(f"{name}: {figures}, ratio {ten / one:.1f}")


if __name__ == "__main__":
    main()
