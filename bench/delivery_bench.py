"""Measure delivery to Discord through the whole cog (a real nextcord bot on fake REST).

Run: `.venv/bin/python bench/delivery_bench.py` (about 20 s).

- First token to first Discord send, in both delivery modes: the model's first chunk is a
  complete paragraph, so any delay past its arrival is ours. Median and worst of 20 turns.
- Discord calls for a 1,000-token answer at 50 tokens/s, in both modes, against the ceiling
  "one per edit interval plus the sends a split needs". Time runs 5x faster than real (250
  tokens/s, a 200 ms edit interval) so the run is short; calls per interval are unchanged.
- Messages for an answer at the default ceiling (19,500 characters) written as lines with no
  blank line between them, as roleplay models write, in messages mode: the fewest that line
  ends allow, against that count.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.llm_server import Action, LLMServer, Reply, pause, sse
from tests.support.nextcord_fake import start_nextcord_bot, stop_nextcord_bot
from tests.support.openai_wire import chunk
from tomori.config.models import ModelChain
from tomori.config.settings import Delivery, Settings
from tomori.delivery.chunking import MESSAGE_LIMIT, split_message

SPEEDUP = 5
TOKENS = 1_000
TOKENS_PER_S = 50 * SPEEDUP
EDIT_INTERVAL_MS = 1_000 // SPEEDUP


class NoPatch:
    """monkeypatch.setattr for a script: the bench process ends with the bot."""

    def setattr(self, target: Any, name: str, value: Any) -> None:
        setattr(target, name, value)


def token_reply(tokens: int, rate: float) -> Reply:
    body: list[Action] = []
    for n in range(tokens):
        body.append(pause(1 / rate))
        text = "word " if n % 60 != 59 else "word.\n\n"
        body.append(sse(chunk(text)))
    body += [sse(chunk(finish="stop")), sse("[DONE]")]
    return Reply(body=body)


def first_paragraph_then_more() -> Reply:
    return Reply(
        body=[
            sse(chunk("A complete first paragraph.\n\n")),
            pause(0.05),
            sse(chunk("And the rest.")),
            sse(chunk(finish="stop")),
            sse("[DONE]"),
        ]
    )


async def first_send_latency(server: LLMServer, delivery: Delivery, folder: Path) -> list[float]:
    settings = Settings(
        db_path=folder / f"first-{delivery}.db",
        delivery=delivery,
        stream_edit_interval_ms=EDIT_INTERVAL_MS,
    )
    bot = await start_nextcord_bot(settings, chain(server), NoPatch())
    latencies = []
    try:
        for _ in range(20):
            server.script(first_paragraph_then_more())
            server.request_arrived.clear()
            bot.discord.sent_event.clear()
            bot.say(f"{bot.mention()} go")
            await server.request_arrived.wait()
            started = time.perf_counter()  # the first chunk is written as the request lands
            await bot.discord.sent_event.wait()
            latencies.append(time.perf_counter() - started)
            await bot.settled()
    finally:
        await stop_nextcord_bot(bot)
    return latencies


async def calls_per_answer(
    server: LLMServer, delivery: Delivery, folder: Path
) -> tuple[int, int, float]:
    settings = Settings(
        db_path=folder / f"calls-{delivery}.db",
        delivery=delivery,
        stream_edit_interval_ms=EDIT_INTERVAL_MS,
    )
    bot = await start_nextcord_bot(settings, chain(server), NoPatch())
    try:
        server.script(token_reply(TOKENS, TOKENS_PER_S))
        started = time.perf_counter()
        bot.say(f"{bot.mention()} talk")
        await bot.settled()
        elapsed = time.perf_counter() - started
        calls = len(bot.discord.sent) + len(bot.discord.edits)
        text = "".join(bot.discord.contents())
    finally:
        await stop_nextcord_bot(bot)
    splits = len(split_message(text))
    ceiling = int(elapsed / (EDIT_INTERVAL_MS / 1000)) + splits
    return calls, ceiling, elapsed


LINE = "the quick brown fox jumps over it, and over it again."
"""One line of the ceiling answer (64 characters with its number and line end)."""


async def messages_at_the_ceiling(server: LLMServer, folder: Path) -> tuple[int, int, int]:
    """The messages an answer at the ceiling without blank lines took, the fewest its line
    ends allow, and the characters it showed."""
    settings = Settings(db_path=folder / "ceiling.db", delivery=Delivery.MESSAGES)
    bot = await start_nextcord_bot(settings, chain(server), NoPatch())
    lines = [f"Line {n:03d}: {LINE}" for n in range(400)]
    body: list[Action] = [sse(chunk(line + "\n")) for line in lines]
    server.script(Reply(body=[*body, sse(chunk(finish="stop")), sse("[DONE]")]))
    try:
        bot.say(f"{bot.mention()} the long story")
        await bot.settled()
        shown = bot.discord.contents()
    finally:
        await stop_nextcord_bot(bot)
    per_message = MESSAGE_LIMIT // (len(lines[0]) + 1) * (len(lines[0]) + 1)
    fewest = -(-settings.max_answer_chars // per_message)
    return len(shown), fewest, sum(len(message) for message in shown)


def chain(server: LLMServer) -> ModelChain:
    return ModelChain.from_env(
        {
            "TOMORI_MODELS": "openai:bench",
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": f"{server.base_url}/v1",
        }
    )


async def main() -> None:
    server = LLMServer()
    await server.start()
    try:
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            print("first token to first Discord send (20 turns)")
            for delivery in Delivery:
                latencies = await first_send_latency(server, delivery, folder)
                print(
                    f"  {delivery:8}  median {statistics.median(latencies) * 1e3:6.2f} ms   "
                    f"worst {max(latencies) * 1e3:6.2f} ms"
                )
            print(
                f"Discord calls for a {TOKENS}-token answer at {TOKENS_PER_S} tokens/s, "
                f"edit interval {EDIT_INTERVAL_MS} ms (50 tokens/s and 1 s, {SPEEDUP}x faster)"
            )
            for delivery in Delivery:
                calls, ceiling, elapsed = await calls_per_answer(server, delivery, folder)
                print(f"  {delivery:8}  {calls:3} calls over {elapsed:.1f} s; ceiling {ceiling}")
            sent, fewest, shown = await messages_at_the_ceiling(server, folder)
            print("an answer at the ceiling in lines without blank lines, messages mode")
            print(f"  {sent} messages for {shown:,} characters; fewest by line ends {fewest}")
    finally:
        await server.close()


if __name__ == "__main__":
    asyncio.run(main())
