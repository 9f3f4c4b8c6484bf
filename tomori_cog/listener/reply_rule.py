"""Which messages the cog answers, and whether it shows them its errors.

A direct trigger (a mention, a reply to the bot, a direct message) is answered with errors
shown. A message in a channel that answers every message (`TOMORI_CHANNELS`, or an admin's
`/tomori autoreply`, which beats it) is answered silently. Only the latter needs the store,
so it is asked last, through its cache; if it cannot answer, the environment decides.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from enum import StrEnum
from typing import Any

from tomori.config.settings import Settings
from tomori_cog.channel_config import ChannelConfig
from tomori_cog.library import Library

log = logging.getLogger(__name__)

WARN_EVERY_S = 60.0
"""A store out of reach fails every message's lookup: one warning a minute says so."""


class Addressed(StrEnum):
    """How a message asked for its reply, which decides whether the asker is told of failures."""

    DIRECTLY = "direct"
    """A mention, a reply to the bot, a direct message: errors and timeouts are told."""
    PASSIVELY = "passive"
    """A message in a channel that answers every message: a failure stays silent."""

    @property
    def surfaces_errors(self) -> bool:
        return self is Addressed.DIRECTLY

    def payload(self) -> dict[str, str]:
        """What a trigger carries of it, in the queue (JSON) across restarts and processes."""
        return {"addressed": self.value}

    @classmethod
    def of(cls, payload: Mapping[str, Any]) -> Addressed:
        """Read back what `payload()` wrote. A trigger queued by an earlier version of the cog
        (a rolling restart) carries `surface_errors` instead, and is read by it."""
        if "addressed" in payload:
            return cls(payload["addressed"])
        return cls.DIRECTLY if payload.get("surface_errors") else cls.PASSIVELY


class ReplyRule:
    def __init__(
        self,
        bot: Any,
        library: Library,
        settings: Settings,
        config: ChannelConfig,
        started: Callable[[], Awaitable[object]],
    ) -> None:
        self._bot = bot
        self._library = library
        self._settings = settings
        self._config = config
        self._started = started
        """Opens the store, once, before it is first read."""
        self._warned_at = -WARN_EVERY_S

    async def addressed(self, message: Any) -> Addressed | None:
        """How the message asks for a reply; None if it gets none."""
        me = self._bot.user
        author = message.author
        if me is None or author.id == me.id:
            return None
        if from_bot(message) and not self._settings.reply_to_bots:
            return None
        types = self._library.module.MessageType
        if message.type not in (types.default, types.reply):
            return None
        text = (message.content or "").strip()
        if (not text and not message.attachments) or text.startswith("!"):
            return None
        if message.guild is None or any(user.id == me.id for user in message.mentions):
            return Addressed.DIRECTLY
        replied = message.reference.resolved if message.reference is not None else None
        if getattr(getattr(replied, "author", None), "id", None) == me.id:
            return Addressed.DIRECTLY
        return Addressed.PASSIVELY if await self._answers_every_message(message) else None

    async def _answers_every_message(self, message: Any) -> bool:
        channel_id = message.channel.id
        try:
            await self._started()
            resolved = await self._config.resolved(message.guild.id, channel_id, cached=True)
        except Exception as error:
            if time.monotonic() - self._warned_at >= WARN_EVERY_S:
                self._warned_at = time.monotonic()
                log.warning("channel %s: could not read its settings: %r", channel_id, error)
            return self._config.defaults(channel_id).autoreply
        return resolved.autoreply.value


def from_bot(message: Any) -> bool:
    """Whether a bot or a webhook wrote the message."""
    return bool(message.author.bot or message.webhook_id)
