"""A bot author's script: load the extension, have it answer once, then return.

    python -m tests.support.extension_script {nextcord,discordpy} EXTENSION LLM_BASE_URL DB_PATH
        {return,unload}

`return` ends `main` with the cog still loaded and the bot never closed; `unload` unloads the
extension first. Either way the script prints the answer and must then exit by itself.
"""

from __future__ import annotations

import asyncio
import os
import sys

from tests.support.bot_process import _Setattr
from tests.support.dpy import start_dpy_bot
from tests.support.nextcord_fake import start_nextcord_bot
from tomori.config.models import ModelChain
from tomori.config.settings import Settings


async def main(library: str, extension: str, base_url: str, db_path: str, ending: str) -> None:
    os.environ.update(
        TOMORI_MODELS="openai:m",
        OPENAI_API_KEY="k",
        OPENAI_BASE_URL=f"{base_url}/v1",
        TOMORI_DB_PATH=db_path,
    )
    settings, chain = Settings.from_env(), ModelChain.from_env()
    if library == "nextcord":
        nc = await start_nextcord_bot(settings, chain, _Setattr(), extension=extension)
        nc.say(f"{nc.mention()} hello")
        await nc.settled()
        print("answered:", nc.discord.contents(), flush=True)
        if ending == "unload":
            nc.bot.unload_extension(extension)
    else:
        dpy = await start_dpy_bot(settings, chain, _Setattr(), extension=extension)
        await dpy.say(f"{dpy.mention()} hello")
        await dpy.settled()
        print("answered:", [m.content for m in await dpy.bot_messages()], flush=True)
        if ending == "unload":
            await dpy.bot.unload_extension(extension)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
