"""One bot process of bench/discord_limits_bench.py: a real bot with the cog, its channels'
mentions, and its event loop's lag.

    python bench/discord_limits_worker.py CONFIG_JSON

CONFIG_JSON names the library, the delivery mode, the faithful server's API base and token,
the LLM server's URL, the database, this process's channels and the deadline. The worker
logs the bot in against the server (tests/support/rest_bots.py), prints `ready`, and waits
for a line on stdin; then every channel's mention is posted to the server and reaches the bot
as the gateway would deliver it, all at once. When every channel's turn has ended, or at the
deadline, it waits (bounded) for the answers' buttons to change as they end (`tidy_ups`), then
prints one JSON line (`lag_p99_ms`, `settled`, `tidied`) and stops the bot.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp
import discord
import nextcord

from tests.support.bots import Library
from tests.support.discord_rest import CONTROL_MESSAGES, pointed_at
from tests.support.rest_bots import arrive, events_handled, logged_in, user_message
from tests.support.world import BOT_ID
from tomori.config.models import ModelChain
from tomori.config.settings import Delivery, Settings, ShowProgress
from tomori_cog import add_tomori
from tomori_cog.chat import TomoriChat
from tomori_cog.pacing import TIDY_WITHIN_S

QUESTION = f"<@{BOT_ID}> tell me about the sea"
EARLIER = "the tide is coming in"
"""What each channel said before the burst: unseen by the bot (`earlier`), or seen and its
history read (`warm`)."""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] if values else 0.0


async def watch_lag(samples: list[float], every: float = 0.01) -> None:
    """How late the loop wakes from a short sleep: what every other task waits too."""
    while True:
        started = time.monotonic()
        await asyncio.sleep(every)
        samples.append(time.monotonic() - started - every)


async def run(config: dict[str, Any]) -> dict[str, Any]:
    channels: list[int] = config["channels"]
    settings = Settings(
        db_path=Path(config["db_path"]),
        delivery=Delivery(config["mode"]),
        history_memory_channels=config.get("memory_channels", Settings().history_memory_channels),
        progress=ShowProgress(config.get("progress", ShowProgress.OFF)),
    )
    chain = ModelChain.from_env(
        {
            "TOMORI_MODELS": "openai:bench-model",
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": f"{config['llm_url']}/v1",
        }
    )
    with pointed_at(config["api_base"]):
        bot = await logged_in(config["library"], config["token"], channels)
        added = add_tomori(bot, settings=settings, chain=chain)
        if added is not None:
            await added
        cog = bot.get_cog("Tomori")
        service: TomoriChat = cog.chat
        await service.ensure_started()
        async with asyncio.timeout(30):  # every process of the token counted: its share taken
            while service.pacing.budget.processes != config.get("processes", 1):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        control = config["api_base"].split("/api/")[0] + CONTROL_MESSAGES
        start = config.get("start", "new")
        if start == "earlier":
            await said_before(bot, channels, control)
        bot.dispatch("ready")  # the session began: Discord has shown the bot every channel
        await events_handled(bot, config["library"])
        if start == "warm":
            await served_before(bot, service, config["library"], channels, control, settings)
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

        lag: list[float] = []
        watcher = asyncio.create_task(watch_lag(lag))
        settled = True
        try:
            async with aiohttp.ClientSession() as session:

                async def ask(channel: int) -> None:
                    message = user_message(QUESTION, channel=channel)
                    async with session.post(control, json=message) as response:
                        response.raise_for_status()
                    arrive(bot, message)

                await asyncio.gather(*(ask(channel) for channel in channels))
            try:
                async with asyncio.timeout(config["deadline"]):
                    await events_handled(bot, config["library"])  # every mention admitted
                    for channel in channels:
                        await service.wait_idle(channel)
            except TimeoutError:
                settled = False
            tidied = await tidy_ups(service)
        finally:
            watcher.cancel()
            result = {
                "lag_p99_ms": percentile(lag, 0.99) * 1000,
                "settled": settled,
                "tidied": tidied,
            }
            print(json.dumps(result), flush=True)
            if config["library"] == "nextcord":
                bot.remove_cog("Tomori")
                closing = getattr(cog, "closing", None)
                if closing is not None:
                    await closing
            else:
                await bot.remove_cog("Tomori")
            await bot.http.close()
    return result


async def tidy_ups(service: TomoriChat) -> bool:
    """Wait for the answers' component tidy-ups, which no turn waits for: each ended answer's
    Stop button taken off, the last answer's take buttons put on. Each gives up by itself past
    `TIDY_WITHIN_S` (the button left as it is), so this wait is bounded by that and a margin;
    False if it ran out (the bench then counts the buttons left)."""
    try:
        async with asyncio.timeout(TIDY_WITHIN_S + 15):
            await asyncio.gather(service.takes.settled(), service.stop_buttons.settled())
    except TimeoutError:
        return False
    return True


async def said_before(bot: Any, channels: list[int], control: str) -> None:
    """Each channel holds a message from before the bot connected: Discord's channel shows
    it as the last message, and the gateway never delivered it."""
    async with aiohttp.ClientSession() as session:
        for channel in channels:
            message = user_message(EARLIER, channel=channel)
            async with session.post(control, json=message) as response:
                response.raise_for_status()
            bot.get_channel(channel).last_message_id = int(message["id"])


async def served_before(
    bot: Any,
    service: TomoriChat,
    library: Library,
    channels: list[int],
    control: str,
    settings: Settings,
) -> None:
    """The channels as a bot that has served them since it started finds them: each said
    something the gateway showed the bot, and the bot read the history before it once (as a
    turn there would have): its memory holds the channels, and a turn needs no history read."""
    posted: dict[int, int] = {}
    async with aiohttp.ClientSession() as session:
        for channel in channels:
            message = user_message(EARLIER, channel=channel)
            async with session.post(control, json=message) as response:
                response.raise_for_status()
            arrive(bot, message)
            posted[channel] = int(message["id"])
    await events_handled(bot, library)
    snowflake = (nextcord if library == "nextcord" else discord).Object
    for channel in channels:
        await service.pacing.read()
        reading = service.memory.reading(channel)
        before = snowflake(id=posted[channel])
        history = bot.get_channel(channel).history(limit=settings.history_limit, before=before)
        messages = [message async for message in history]
        service.memory.read(reading, posted[channel], settings.history_limit, messages)
    await asyncio.sleep(1.2)  # the token's last second of reads is past before the burst


if __name__ == "__main__":
    asyncio.run(run(json.loads(sys.argv[1])))
