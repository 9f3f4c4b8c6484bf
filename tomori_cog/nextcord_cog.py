"""The cog class for nextcord 3 bots (imported only for them).

nextcord's `cog_unload` is not awaited, so closing is started there as a task the cog keeps
(`closing`); `bot.run()` gives pending tasks a moment before it stops the loop, and a bot
that manages its own loop can await `cog.closing`.
"""

import asyncio

import nextcord
from nextcord.ext import commands

from tomori.notices import KILL_DESCRIPTION
from tomori_cog.commands import TomoriCogParts, respond_to_kill
from tomori_cog.library import Library
from tomori_cog.service import TomoriService


def build_cog(service: TomoriService, library: Library) -> commands.Cog:
    class Tomori(TomoriCogParts, commands.Cog):
        """LLM chat that never hangs: streamed replies, /kill, fallback models."""

        def __init__(self) -> None:
            super().__init__(service)
            self.closing: asyncio.Task[None] | None = None

        @commands.Cog.listener()
        async def on_ready(self) -> None:
            await self.service.ensure_started()

        @commands.Cog.listener()
        async def on_message(self, message: nextcord.Message) -> None:
            await self.service.handle_message(message)

        @nextcord.slash_command(name="kill", description=KILL_DESCRIPTION)  # type: ignore[untyped-decorator]
        async def kill(self, interaction: nextcord.Interaction) -> None:  # type: ignore[type-arg]
            await respond_to_kill(library, self.service, interaction)

        def cog_unload(self) -> None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # unloaded outside the loop: nothing was started in it
                return
            self.closing = loop.create_task(self.service.close())

    return Tomori()
