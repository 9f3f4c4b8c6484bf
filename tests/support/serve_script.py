"""The `tomori` command's `serve` on a connected bot, to stop with a signal: nextcord on fake
Discord.

    python -m tests.support.serve_script LLM_BASE_URL DB_PATH {connected,mid-turn}

The bot's `start` stands for a bot connected to Discord (it runs until cancelled). With
`mid-turn`, a mention is answered by a model that stalls after its first paragraph. Prints
`ready` once in that phase, and `closed` once `serve` has returned.
"""

from __future__ import annotations

import asyncio
import os
import sys

from tests.support.bot_process import _Setattr
from tests.support.nextcord_fake import start_nextcord_bot
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori_cog.serving import serve


async def main(base_url: str, db_path: str, phase: str) -> None:
    os.environ.update(
        TOMORI_MODELS="openai:m",
        OPENAI_API_KEY="k",
        OPENAI_BASE_URL=f"{base_url}/v1",
        TOMORI_DB_PATH=db_path,
    )
    nc = await start_nextcord_bot(
        Settings.from_env(), ModelChain.from_env(), _Setattr(), extension="cogs.tomori"
    )
    connected = asyncio.Event()

    async def start(token: str, *, reconnect: bool = True) -> None:
        connected.set()
        await asyncio.Event().wait()  # connected to the gateway until the bot closes

    nc.bot.start = start  # type: ignore[method-assign]
    serving = asyncio.create_task(serve(nc.bot, "token"))
    await connected.wait()
    if phase == "mid-turn":
        nc.say(f"{nc.mention()} tell me everything")
        async with asyncio.timeout(10):
            while not nc.discord.contents():  # noqa: ASYNC110
                await asyncio.sleep(0.01)
    print("ready", flush=True)
    await serving
    print("closed", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
