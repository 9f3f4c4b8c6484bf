"""What both libraries' cogs share: the `/kill` and `/scene` replies and the cog's own small
surface.

Discord drops an interaction not answered within 3 seconds. Stopping a stream is immediate,
but clearing the queue writes to SQLite, which another process may hold for a moment; so if
the outcome is not known within `REPLY_WITHIN_S`, the reply is deferred and sent when it is.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Coroutine
from typing import Any

from tomori.cast.scenes import scene_refused
from tomori.delivery.notices import KILL_FAILED, Notice
from tomori.policy.memories import Answer
from tomori.tools.registry import Tool
from tomori.words import said
from tomori_cog.chat import TomoriChat
from tomori_cog.discord_io import call_failures, embed_for
from tomori_cog.library import Library
from tomori_cog.locales import of_interaction
from tomori_cog.token_redaction import token_redaction

log = logging.getLogger(__name__)

REPLY_WITHIN_S = 2.0


async def respond_to_kill(library: Library, chat: TomoriChat, interaction: Any) -> None:
    user, permissions = interaction.user.id, interaction.permissions
    outcome = _outcome(chat, interaction.channel_id, user, permissions)
    await reply_in_time(library, interaction, outcome, "/kill")


async def respond_to_scene(
    library: Library,
    chat: TomoriChat,
    interaction: Any,
    request: tuple[str, int, str | None],
) -> None:
    """`/scene`: answered ephemerally at once (the scene is queued as the channel's turn, not
    awaited), with the scene's start or why it does not run."""
    outcome = _scene(chat, interaction, request)
    await reply_in_time(library, interaction, outcome, "/scene")


async def _scene(
    chat: TomoriChat, interaction: Any, request: tuple[str, int, str | None]
) -> Notice:
    try:
        user = interaction.user.id
        where = (interaction.guild_id, interaction.channel_id)
        return await chat.start_scene(*where, user, request, interaction.id)
    except Exception:
        log.exception("/scene failed in channel %s", interaction.channel_id)
        return scene_refused(said("scene.not_started"))


async def reply_in_time(
    library: Library,
    interaction: Any,
    answer: Coroutine[Any, Any, Notice | Answer],
    command: str,
) -> None:
    """Reply with the notice `answer` gives (and its file, if it gives one), ephemerally, in
    the language of whoever asked (`tomori_cog.locales`): at once if it comes within
    `REPLY_WITHIN_S`, else after deferring, so Discord never drops the interaction."""
    work = asyncio.ensure_future(answer)
    done, _ = await asyncio.wait({work}, timeout=REPLY_WITHIN_S)
    locale = of_interaction(interaction)
    try:
        if work in done:
            reply = _reply(library, work.result(), locale)
            await interaction.response.send_message(**reply, ephemeral=True)
        else:
            await library.defer(interaction)
            reply = _reply(library, await work, locale)
            await interaction.followup.send(**reply, ephemeral=True)
    except call_failures(library) as error:
        log.warning("could not answer %s in channel %s: %s", command, interaction.channel_id, error)
    finally:
        if not work.done():
            work.cancel()
        await asyncio.gather(work, return_exceptions=True)


def _reply(library: Library, answered: Notice | Answer, locale: str) -> dict[str, Any]:
    """The embed (and the file) of an answer, as either library's send takes them."""
    if isinstance(answered, Notice):
        return {"embed": embed_for(library, answered, locale)}
    reply: dict[str, Any] = {"embed": embed_for(library, answered.notice, locale)}
    if answered.file is not None:
        name, data = answered.file
        reply["file"] = library.module.File(io.BytesIO(data), filename=name)
    return reply


async def _outcome(
    chat: TomoriChat, channel_id: int | None, user_id: int, permissions: Any
) -> Notice:
    try:
        return await chat.kill(channel_id, user_id, bool(permissions.manage_messages))
    except Exception:
        log.exception("/kill failed in channel %s", channel_id)
        return KILL_FAILED


COG_NAME = "Tomori"
"""The cog's name in `bot.get_cog`: its class's name, in both libraries."""


KEPT_TOOLS = "_tomori_tools"
"""The bot's attribute that keeps the tools registered with its Tomori cogs."""


def kept_tools(bot: Any) -> dict[str, Tool]:
    """The tools registered with the bot's Tomori cogs, by name, kept on the bot itself.

    They are the bot's, not one cog's: a reload (or an unload and a load) builds a new cog,
    which offers them too. They are kept on the bot because no module of `tomori_cog` outlives
    a reload of the `tomori_cog` extension: the library imports them all afresh.
    """
    kept: dict[str, Tool] | None = getattr(bot, KEPT_TOOLS, None)
    if kept is None:
        kept = {}
        setattr(bot, KEPT_TOOLS, kept)
    return kept


class TomoriCogParts:
    """What both libraries' cog classes share: the chat, and adding tools to it."""

    extension: str | None = None
    """The extension name that loaded the cog (None if `add_tomori` added it): only that
    name's `teardown` removes it."""

    def __init__(self, chat: TomoriChat) -> None:
        self.chat = chat
        self.library = chat.library
        self._redaction = token_redaction()
        for tool in kept_tools(chat.bot).values():
            chat.tools.register(tool)

    def added(self) -> None:
        """From its adding (`tomori_cog._added`) until its unloading, no log line shows a
        Discord token (`tomori_cog.token_redaction`)."""
        self._redaction.install()

    def unloaded(self) -> None:
        """Its unloading, or its adding failed: the redaction is taken away."""
        self._redaction.remove()

    async def ensure_started(self) -> None:
        """Open the database, migrate, recover the channels' locks; once (the cog does it
        itself when the bot connects, and on the first message)."""
        await self.chat.ensure_started()

    async def wait_idle(self, channel_id: int) -> None:
        """Wait until the channel's running and queued turns are done."""
        await self.chat.wait_idle(channel_id)

    async def close(self) -> None:
        """Stop every turn, release its lock, close the providers and the database (unloading
        the extension does it too)."""
        await self.chat.close()

    def register_tool(self, tool: Tool) -> None:
        """Offer `tool` to the model from the next turn on, in this cog and in every Tomori
        cog the bot loads later (a reload's among them). Registering a tool under a name
        already registered replaces the earlier one. A built-in tool's name, or a name that is
        not letters, digits, _ or - (at most 64), raises `ConfigError`."""
        self.chat.tools.register(tool)
        kept_tools(self.chat.bot)[tool.name] = tool
