"""Measure what a channel summary adds to a turn's answer: nothing, since it is folded in the
background.

Run: `.venv/bin/python bench/summary_bench.py` (about forty seconds).

Through the cog: a real nextcord bot with the cog on the REST recorder, three channels of 200
messages each and a window of 20 (`TOMORI_HISTORY_LIMIT`), so a fold is due at every turn. Its
model is a local server that answers a turn's request at once and takes `FOLD_S` to write a
summary (a slow summarizing model: longer than a turn). Twenty mentions, round the channels,
each answered before the next and `TURN_S` apart (so no channel's write bucket ever holds an
answer back), first with summaries off (the baseline), then on, in the same process. Printed: the
median and 90th percentile of the time from a mention to the answer's first text posted, in
each run, and their ratio; the folds written in the run with summaries, and how many turns were
answered while one was being written (by its start and its known length), which is when a fold
on the answer's path would show.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.llm_server import LLMServer, Reply, SeenRequest
from tests.support.nextcord_fake import BOB, start_nextcord_bot, stop_nextcord_bot
from tests.support.scripts import answer
from tests.support.world import CHANNEL_IDS
from tomori.config.models import ModelChain
from tomori.config.settings import Settings, ShowProgress
from tomori.summary.folding import INSTRUCTION

TURNS = 20
CHANNEL_MESSAGES = 200
WINDOW = 20
FOLD_S = 1.0
"""How long the summarizing model takes to write a summary: longer than a turn's answer, and
than the time to the next turn, so each fold is being written while the next answer is."""
TURN_S = 0.7
"""A mention every 0.7 s, round the three channels: one per channel every 2.1 s, within its
write bucket (Discord's five messages in five seconds, the typing and the answer counted)."""
SAID = "did anyone see the match last night? the second half was something else, honestly"


class NoPatch:
    def setattr(self, target: Any, name: str, value: Any) -> None:
        setattr(target, name, value)


class Model:
    """The local model: a turn answered at once, a summary written in `FOLD_S`."""

    def __init__(self) -> None:
        self.folds: list[float] = []
        """When each summarizing request came (monotonic seconds)."""

    def reply(self, request: SeenRequest) -> Reply:
        if INSTRUCTION in json.dumps(request.body.get("messages", [])):
            self.folds.append(time.monotonic())
            return answer("Earlier, the members talked about the match.", gap=FOLD_S / 8)
        return answer("Noted.")


async def run(summaries: bool) -> tuple[list[float], int, int]:
    """The first-text times of `TURNS` mentions (seconds), the folds written, and the turns
    answered while a fold was being written."""
    model = Model()
    server = LLMServer(default=model.reply)
    await server.start()
    chain = ModelChain.from_env(
        {
            "TOMORI_MODELS": "openai:bench",
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": f"{server.base_url}/v1",
        }
    )
    first_texts: list[float] = []
    spans: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            db_path=Path(folder) / "summary.db",
            history_limit=WINDOW,
            progress=ShowProgress.OFF,
            summaries=summaries,
        )
        bot = await start_nextcord_bot(settings, chain, NoPatch())
        try:
            for channel in CHANNEL_IDS:
                for n in range(CHANNEL_MESSAGES):
                    bot.say(f"({n}) {SAID}", author=BOB, name="bob", channel=channel)
            await bot.settled()
            for turn in range(TURNS):
                channel = CHANNEL_IDS[turn % len(CHANNEL_IDS)]
                bot.discord.sent_event.clear()
                asked = time.monotonic()
                bot.say(f"{bot.mention()} question {turn}", channel=channel)
                await bot.discord.sent_event.wait()
                shown = time.monotonic()
                first_texts.append(shown - asked)
                spans.append((asked, shown))
                await bot.settled((channel,))  # the answer is done; a fold may still be written
                # Each channel's next answer comes after its write bucket refilled (Discord's
                # five messages in five seconds), so the bucket is in neither run's times.
                await asyncio.sleep(max(0.0, asked + TURN_S - time.monotonic()))
            async with asyncio.timeout(10):  # the last folds end, so none is cut at the close
                while server.in_flight:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
        finally:
            await stop_nextcord_bot(bot)
            await server.close()
    overlapped = sum(
        1
        for asked, shown in spans
        if any(start < shown and asked < start + FOLD_S for start in model.folds)
    )
    return first_texts, len(model.folds), overlapped


def p90(times: list[float]) -> float:
    return statistics.quantiles(times, n=10)[-1]


async def main() -> None:
    off, _, _ = await run(summaries=False)
    on, folds, overlapped = await run(summaries=True)
    ratio = statistics.median(on) / statistics.median(off)
    print(
        f"through the cog, {TURNS} mentions in channels of {CHANNEL_MESSAGES} messages, a window"
        f" of {WINDOW}, a summary taking {FOLD_S:g} s to write\n"
        f"  summaries off (baseline): first text median {statistics.median(off) * 1000:.1f} ms,"
        f" p90 {p90(off) * 1000:.1f} ms\n"
        f"  summaries on:             first text median {statistics.median(on) * 1000:.1f} ms,"
        f" p90 {p90(on) * 1000:.1f} ms\n"
        f"  ratio on / off (median): {ratio:.2f}\n"
        f"  {folds} folds written; {overlapped} of {TURNS} turns answered while one was written"
    )


if __name__ == "__main__":
    asyncio.run(main())
