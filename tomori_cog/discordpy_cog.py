"""The cog class for discord.py 2 bots (imported only for them)."""

import discord
from discord import app_commands
from discord.ext import commands

from tomori.notices import KILL_DESCRIPTION
from tomori_cog.commands import TomoriCogParts, respond_to_kill
from tomori_cog.library import Library
from tomori_cog.service import TomoriService


def build_cog(service: TomoriService, library: Library) -> commands.Cog:
    class Tomori(TomoriCogParts, commands.Cog):
        """LLM chat that never hangs: streamed replies, /kill, fallback models."""

        async def cog_load(self) -> None:
            await self.service.ensure_started()

        async def cog_unload(self) -> None:
            await self.service.close()

        @commands.Cog.listener()
        async def on_message(self, message: discord.Message) -> None:
            await self.service.handle_message(message)

        @app_commands.command(name="kill", description=KILL_DESCRIPTION)
        async def kill(self, interaction: discord.Interaction) -> None:
            await respond_to_kill(library, self.service, interaction)

    return Tomori(service)
