"""Measure /kill to the next message admitted: how soon a channel takes a message after /kill.

Run: `.venv/bin/python bench/kill_bench.py [KILLS]` (about five minutes at 100 kills: the
channels' write buckets pace the rounds). A real nextcord bot with the cog runs on the REST
recorder; the model is the local LLM server.

Each round, in one of three channels in turn: a member asks, and the model streams an answer
of two paragraphs of 1,500 characters at once, then stalls. The first paragraph is shown; the
second is a message of its own, waiting for the channel's next slot (Discord's bucket: about a
second after the first) when a moderator's /kill comes. At once after the /kill a message
arrives; if the channel ignores it, another follows as soon as it is ignored, until one is
admitted (its turn starts). The figure is the time from the /kill to that admission: p50 and
p99 over KILLS rounds, in each delivery mode.

Two measures of the same run bound it from below: the same round with nothing waiting for the
channel (the model stalls after one paragraph, which is shown), where a /kill has only to stop
the stream and hand the channel on; and a message admitted in a free channel, which is the
least any admission takes. The ratio of the p99s against the first is the cost of what waited.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.llm_server import LLMServer, Reply, sse, stall
from tests.support.nextcord_fake import (
    CHANNEL_IDS,
    NextcordBot,
    start_nextcord_bot,
    stop_nextcord_bot,
)
from tests.support.openai_wire import chunk
from tests.support.scripts import answer
from tomori.config.models import ModelChain
from tomori.config.settings import Delivery, KillPolicy, Settings
from tomori.locks import Admission, Trigger

KILLS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
FREE_ADMISSIONS = 50
PARAGRAPH = "word " * 300
"""1,500 characters: two of them are two messages."""


class NoPatch:
    def setattr(self, target: Any, name: str, value: Any) -> None:
        setattr(target, name, value)


def chain(base_url: str) -> ModelChain:
    return ModelChain.from_env(
        {
            "TOMORI_MODELS": "openai:bench",
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": f"{base_url}/v1",
        }
    )


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def stalled_after(*paragraphs: str) -> Reply:
    return Reply(body=[sse(chunk("".join(f"{p}\n\n" for p in paragraphs))), stall()])


class Admissions:
    """The cog's channel locks, timed: when each message was admitted, and how."""

    def __init__(self) -> None:
        self._seen: dict[str, asyncio.Future[tuple[float, Admission]]] = {}

    def watch(self, submit: Callable[[Trigger], Awaitable[Admission]]) -> Any:
        async def timed(trigger: Trigger) -> Admission:
            admission = await submit(trigger)
            self._future(trigger.message_id or "").set_result((time.monotonic(), admission))
            return admission

        return timed

    async def of(self, message_id: str) -> tuple[float, Admission]:
        return await asyncio.wait_for(self._future(message_id), 30)

    def _future(self, message_id: str) -> asyncio.Future[tuple[float, Admission]]:
        if message_id not in self._seen:
            self._seen[message_id] = asyncio.get_running_loop().create_future()
        return self._seen[message_id]


async def started_bot(
    folder: Path, name: str, server: LLMServer, delivery: Delivery
) -> tuple[NextcordBot, Admissions]:
    settings = Settings(
        db_path=folder / f"{name}.db", delivery=delivery, kill_policy=KillPolicy.ANYONE
    )
    bot = await start_nextcord_bot(settings, chain(server.base_url), NoPatch())
    locks = (await bot.chat.ensure_started()).locks
    admissions = Admissions()
    locks.submit = admissions.watch(locks.submit)  # type: ignore[method-assign]
    return bot, admissions


async def next_admitted(bot: NextcordBot, admissions: Admissions, channel: int) -> float:
    """Messages, each as soon as the one before was ignored, until one is admitted; when."""
    while True:
        message = bot.say(f"{bot.mention()} next", channel=channel)
        at, admission = await admissions.of(message["id"])
        if admission is not Admission.IGNORED:
            return at


async def kill_to_admitted(
    folder: Path, server: LLMServer, delivery: Delivery, *, waiting: bool
) -> list[float]:
    bot, admissions = await started_bot(folder, f"{delivery}-{waiting}", server, delivery)
    paragraphs = (PARAGRAPH, PARAGRAPH) if waiting else (PARAGRAPH,)
    latencies = []
    try:
        for round_ in range(KILLS):
            channel = CHANNEL_IDS[round_ % len(CHANNEL_IDS)]
            server.script(stalled_after(*paragraphs), answer("Next."))
            bot.discord.sent_event.clear()
            bot.say(f"{bot.mention()} think", channel=channel)
            await bot.discord.sent_event.wait()  # the first paragraph is shown
            killed_at = time.monotonic()
            bot.bot._connection.parse_interaction_create(bot.kill_payload(channel=channel))
            latencies.append(await next_admitted(bot, admissions, channel) - killed_at)
            await bot.settled((channel,))
    finally:
        await stop_nextcord_bot(bot)
    return latencies


async def free_admissions(folder: Path, server: LLMServer) -> list[float]:
    """A message admitted in a channel where nothing runs: from its arrival."""
    bot, admissions = await started_bot(folder, "free", server, Delivery.MESSAGES)
    latencies = []
    try:
        for round_ in range(FREE_ADMISSIONS):
            channel = CHANNEL_IDS[round_ % len(CHANNEL_IDS)]
            server.script(answer("Hello."))
            said_at = time.monotonic()
            message = bot.say(f"{bot.mention()} hello", channel=channel)
            at, admission = await admissions.of(message["id"])
            assert admission is Admission.STARTED, admission
            latencies.append(at - said_at)
            await bot.settled((channel,))
    finally:
        await stop_nextcord_bot(bot)
    return latencies


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms"


async def measure() -> str:
    server = LLMServer()
    await server.start()
    lines = [f"/kill -> next message admitted, {KILLS} kills per row (p50, p99)"]
    try:
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            free = await free_admissions(folder, server)
            for delivery in (Delivery.MESSAGES, Delivery.EDIT):
                idle = await kill_to_admitted(folder, server, delivery, waiting=False)
                busy = await kill_to_admitted(folder, server, delivery, waiting=True)
                ratio = percentile(busy, 0.99) / percentile(idle, 0.99)
                lines += [
                    f"  {delivery:<8} a message waiting for the channel's slot"
                    f"  {ms(statistics.median(busy))}  {ms(percentile(busy, 0.99))}"
                    f"  {ratio:6.2f}x the p99 below",
                    f"  {delivery:<8} nothing waiting (baseline)              "
                    f"  {ms(statistics.median(idle))}  {ms(percentile(idle, 0.99))}",
                ]
            lines.append(
                f"  a message admitted in a free channel (bound)         "
                f"  {ms(statistics.median(free))}  {ms(percentile(free, 0.99))}"
            )
    finally:
        await server.close()
    return "\n".join(lines)


if __name__ == "__main__":
    print(asyncio.run(measure()))
