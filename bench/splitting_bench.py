"""Show that cutting text into messages is linear in the text's length.

Run: `.venv/bin/python bench/splitting_bench.py` (a few seconds).

One chunk of 100 KB and one of 1 MB (prose with paragraphs, URLs, inline code, a code block,
emoji and hidden blocks) go through `split_message`, the streaming `Segmenter` and the
`HiddenBlocks` capture in one feed, the worst case for a model that sends a huge chunk.
Linear cost gives a ratio near 10 for 10x the text; the old splitter, which re-scanned the
rest of the text at every cut, gave about 100.

Then one chunk of prose with no line break (1, 2 and 4 MB) goes into the stream writer, in both
delivery modes, as a model that sends its whole answer at once: the writer cuts only the
messages the answer's ceiling lets out, so the time stays small and grows linearly (about 2 for
twice the text; reading each cut's whole line made 4 MB cost 8.7 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.memory_channel import MemoryChannel
from tests.support.recording_port import RecordingPort
from tomori.config.settings import Delivery
from tomori.delivery.chunking import split_message
from tomori.delivery.hidden import HiddenBlocks
from tomori.delivery.port import AnswerCut
from tomori.delivery.segmenter import Segmenter
from tomori.delivery.writer import ChannelWriter
from tomori.generation.state import TurnState

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


def feed_once(delivery: Delivery, text: str) -> float:
    """How long the event loop is held while one chunk is fed and the first sends are made."""

    async def run() -> float:
        port, state = RecordingPort(), TurnState("1", notices=MemoryChannel())
        writer = ChannelWriter(port, state, delivery=delivery, edit_interval_s=0)
        started = time.perf_counter()
        with contextlib.suppress(AnswerCut):
            writer.feed(text)
            await writer.finish()
        return time.perf_counter() - started

    return asyncio.run(run())


def huge_chunks() -> None:
    prose = "lorem ipsum dolor sit amet "
    for delivery in (Delivery.MESSAGES, Delivery.EDIT):
        costs = []
        for megabytes in (1, 2, 4):
            text = (prose * (megabytes * 1_000_000 // len(prose) + 1))[: megabytes * 1_000_000]
            costs.append(min(feed_once(delivery, text) for _ in range(3)))
        figures = ", ".join(f"{2**n} MB {cost * 1000:.1f} ms" for n, cost in enumerate(costs))
        ratios = f"{costs[1] / costs[0]:.1f}, {costs[2] / costs[1]:.1f}"
        print(f"one chunk, {delivery.value} mode: {figures}, ratios {ratios}")


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
    huge_chunks()


if __name__ == "__main__":
    main()
