"""llmcord's bot, from a checkout, as one bot process of bench/discord_limits_bench.py.

    python bench/llmcord_worker.py CONFIG_JSON

llmcord (github.com/jakobdylanc/llmcord, a discord.py bot in one file, `llmcord.py`) builds its
bot when it is imported, from the `config.yaml` of the working directory. This worker writes
that file in a folder of its own (the bench's LLM server as llmcord's one provider and model,
llmcord's defaults otherwise: embeds, edited about once a second), imports llmcord from the
checkout CONFIG_JSON names with discord.py pointed at the faithful server, and logs its bot in
as the cog's workers log theirs (tests/support/rest_bots.py: no gateway; each mention reaches
the bot as the gateway would deliver it). It prints `ready`, posts every channel's mention on a
`go` line, and on a `stop` line (the bench sends it once every answer stands whole, or at the
deadline: llmcord has no way to say it is idle) prints one JSON line (`lag_p99_ms`) and stops.

llmcord needs PyYAML, python-dotenv and httpx, which the cog does not: install them into the bench's
environment to run this row.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp
from discord_limits_worker import QUESTION, percentile, watch_lag  # (this folder)

from tests.support.discord_rest import CONTROL_MESSAGES, pointed_at
from tests.support.rest_bots import arrive, log_in, user_message

MODEL = "bench/bench-model"


def llmcord_config(token: str, llm_url: str) -> str:
    """llmcord's config.yaml, as JSON (which YAML reads): its shipped defaults, one model."""
    return json.dumps(
        {
            "bot_token": token,
            "status_message": "",
            "max_text": 100000,
            "max_images": 5,
            "max_messages": 25,
            "use_plain_responses": False,
            "allow_dms": True,
            "permissions": {
                "users": {"admin_ids": [], "allowed_ids": [], "blocked_ids": []},
                "roles": {"allowed_ids": [], "blocked_ids": []},
                "channels": {"allowed_ids": [], "blocked_ids": []},
            },
            "providers": {"bench": {"base_url": f"{llm_url}/v1", "api_key": "sk-bench"}},
            "models": {MODEL: None},
            "system_prompt": "You are a helpful assistant.",
        }
    )


def imported_without_starting(checkout: str) -> Any:
    """llmcord's module, its bot built from ./config.yaml but not started: llmcord.py ends by
    starting its bot with `asyncio.run` at import (it has no `__main__` guard), which would dial
    Discord's gateway; that one call is set aside while it is imported."""
    sys.path.insert(0, checkout)
    run_as_it_was = asyncio.run
    asyncio.run = lambda main, **_: main.close()
    try:
        import llmcord  # type: ignore[import-not-found]
    finally:
        asyncio.run = run_as_it_was
    return llmcord


async def run(config: dict[str, Any]) -> None:
    channels: list[int] = config["channels"]
    with pointed_at(config["api_base"]):
        llmcord = imported_without_starting(config["llmcord"])
        bot = llmcord.discord_bot
        await log_in(bot, "discordpy", config["token"], channels)
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.readline)

        lag: list[float] = []
        watcher = asyncio.create_task(watch_lag(lag))
        control = config["api_base"].split("/api/")[0] + CONTROL_MESSAGES
        try:
            async with aiohttp.ClientSession() as session:

                async def ask(channel: int) -> None:
                    message = user_message(QUESTION, channel=channel)
                    async with session.post(control, json=message) as response:
                        response.raise_for_status()
                    arrive(bot, message)

                await asyncio.gather(*(ask(channel) for channel in channels))
            await loop.run_in_executor(None, sys.stdin.readline)  # `stop`
        finally:
            watcher.cancel()
            print(json.dumps({"lag_p99_ms": percentile(lag, 0.99) * 1000}), flush=True)
            await bot.http.close()
            await llmcord.httpx_client.aclose()


if __name__ == "__main__":
    settings = json.loads(sys.argv[1])
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "config.yaml").write_text(
            llmcord_config(settings["token"], settings["llm_url"])
        )
        os.chdir(folder)  # llmcord reads ./config.yaml
        asyncio.run(run(settings))
