"""Measure how many history requests the cog sends Discord, with the memory of recent messages
and without it (`TOMORI_HISTORY_MEMORY_CHANNELS=0`).

Run: `.venv/bin/python bench/history_bench.py [CHANNELS] [TURNS]` (500 channels of 5 turns by
default; under a minute). A real nextcord bot with the cog runs on the REST recorder, which
echoes the bot's own messages and edits through the gateway as Discord does; the model is the
local LLM server, answering at once. In every channel, at once, a member mentions the bot and
someone else chats, `TURNS` times, each turn after the channel's last answer. Printed: history
requests in all, and per turn, both ways; and that the model was shown the same both ways.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.llm_server import LLMServer, SeenRequest
from tests.support.nextcord_fake import (
    BOB,
    CHANNEL_ID,
    start_nextcord_bot,
    stop_nextcord_bot,
)
from tests.support.scripts import answer
from tomori.config.models import ModelChain
from tomori.config.settings import Settings


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


def reply_to(request: SeenRequest) -> Any:
    """Each answer names how many messages it was shown, so the conversation differs by turn."""
    return answer(f"I was shown {len(request.body['messages'])} messages.")


async def conversation(
    folder: Path, channels: int, turns: int, remembered: int
) -> tuple[int, float, list[Any]]:
    """History requests, seconds taken, and every request the model got (by channel)."""
    server = LLMServer(default=reply_to)
    await server.start()
    ids = tuple(CHANNEL_ID + 100 + n for n in range(channels))
    settings = Settings(
        db_path=folder / f"history-{remembered}.db", history_memory_channels=remembered
    )
    bot = await start_nextcord_bot(settings, chain(server.base_url), NoPatch(), channel_ids=ids)
    started = time.monotonic()
    try:
        for turn in range(turns):
            for channel in ids:
                bot.say(f"chatter {turn}", author=BOB, name="bob", channel=channel)
                bot.say(f"{bot.mention()} question {turn}", channel=channel)
            await bot.settled(ids)
    finally:
        taken = time.monotonic() - started
        reads = bot.discord.history_reads
        await stop_nextcord_bot(bot)
        await server.close()
    shown = sorted(
        (request.body["messages"] for request in server.requests),
        key=lambda messages: str(messages),
    )
    return reads, taken, shown


async def measure(channels: int, turns: int) -> int:
    """Print the figures; 1 if the model was not shown the same both ways."""
    with tempfile.TemporaryDirectory() as folder:
        rest = await conversation(Path(folder), channels, turns, remembered=0)
        memory = await conversation(Path(folder), channels, turns, remembered=max(500, channels))
    answers = channels * turns
    print(f"{channels} channels, {turns} turns each ({answers} answers)")
    for name, (reads, taken, _) in (("read every turn", rest), ("memory", memory)):
        print(
            f"  {name:>16}: {reads} history requests, {reads / answers:.2f} per turn, {taken:.1f} s"
        )
    same = rest[2] == memory[2]
    print(f"  the model was shown the same both ways: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    arguments = [int(argument) for argument in sys.argv[1:3]]
    sys.exit(asyncio.run(measure(*arguments) if arguments else measure(500, 5)))
