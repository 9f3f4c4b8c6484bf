"""What the model is shown of a channel: the system prompt, recent history, the trigger.

Kept apart from the service because it is the one place a Discord message becomes a
`ContextItem`, and the part of a turn that grows as the cog learns to show the model more of
the conversation. Messages arrive as the library's own objects; the attributes read here are
the same in nextcord and discord.py.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

from tomori.config import Settings
from tomori.providers.base import ContextItem, Role
from tomori_cog.discord_io import call_failures
from tomori_cog.library import Library

log = logging.getLogger(__name__)

MAX_ITEM_CHARS = 8_000
"""A history message longer than this is cut: one huge paste must not crowd out the rest."""


class HistoryReader:
    """Builds a turn's context from the channel the trigger came in."""

    def __init__(self, bot: Any, library: Library, settings: Settings) -> None:
        self._bot = bot
        self._library = library
        self._settings = settings

    async def context(
        self, channel: Any, trigger: Any, waiting: Collection[str]
    ) -> tuple[ContextItem, ...]:
        """System prompt, then recent history oldest first, without the `waiting` messages.

        `waiting` are the IDs of messages still queued for a turn of their own: each is
        answered with its own context, so none is shown to the model ahead of its turn.
        """
        try:
            history = [
                message
                async for message in channel.history(
                    limit=self._settings.history_limit, before=trigger
                )
            ]
        except call_failures(self._library) as error:  # answered without it, not unanswered
            log.info("no history for channel %s: %r", channel.id, error)
            history = []
        history.sort(key=lambda message: message.id)  # snowflakes order by time
        items = [ContextItem(Role.SYSTEM, self._settings.system_prompt)]
        for message in [*history, trigger]:
            if str(message.id) in waiting:
                continue
            item = self.item(message)
            if item is not None:
                items.append(item)
        return tuple(items)

    def item(self, message: Any) -> ContextItem | None:
        """The one place a message becomes what the model sees of it; None if nothing."""
        me = self._bot.user
        text = (message.content or "")[:MAX_ITEM_CHARS]
        if me is not None and message.author.id == me.id:
            return ContextItem(Role.ASSISTANT, text) if text.strip() else None
        images = tuple(
            attachment.url
            for attachment in message.attachments
            if (attachment.content_type or "").startswith("image/")
        )
        if not text.strip() and not images:
            return None
        clean = (message.clean_content or "")[:MAX_ITEM_CHARS]
        return ContextItem(Role.USER, f"{message.author.display_name}: {clean}", images)
