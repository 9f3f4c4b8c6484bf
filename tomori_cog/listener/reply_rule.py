"""Which messages the cog answers, and whether it shows them its errors.

A direct trigger (a mention, a reply to the bot, a direct message) is answered with errors
shown, in the bot's own voice. A server message that replies to a persona's message or says a
persona's trigger word is a direct trigger too, answered by those personas
(`tomori.cast.personas.addressed`), read through the personas' cache. A message in a
channel that answers every message (`TOMORI_CHANNELS`, or an admin's `/tomori autoreply`,
which beats it) is answered silently: asked last, through its cache; if the store cannot
answer, the environment decides. A message not answered is so for a reason (`Unaddressed`),
which "Why no answer?" tells.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tomori.cast.personas import Persona, PersonaStore, addressed, shown_as
from tomori.config.settings import Settings
from tomori.monitoring.why import Unaddressed
from tomori.turns import DIRECTLY, PASSIVELY, Addressed, ChannelConfig, TurnRequest
from tomori_cog.library import Library

log = logging.getLogger(__name__)

WARN_EVERY_S = 60.0
"""A store out of reach fails every message's lookup: one warning a minute says so."""


class ReplyRule:
    def __init__(
        self,
        bot: Any,
        library: Library,
        settings: Settings,
        config: ChannelConfig,
        started: Callable[[], Awaitable[object]],
        personas: Callable[[], PersonaStore | None],
        own_webhook: Callable[[int], Awaitable[bool]],
    ) -> None:
        self._bot = bot
        self._library = library
        self._settings = settings
        self._config = config
        self._started = started
        """Opens the store, once, before it is first read."""
        self._personas = personas
        self._own_webhook = own_webhook
        """Whether a webhook is the bot's own (its personas' messages are never answered)."""
        self._warned_at = -WARN_EVERY_S
        self._personas_warned_at = -WARN_EVERY_S

    async def addressed(self, message: Any) -> TurnRequest | None:
        """How the message asks for a reply, and who answers it; None if it gets none."""
        judged = await self.judged(message)
        return None if isinstance(judged, Unaddressed) else judged

    async def judged(self, message: Any) -> TurnRequest | Unaddressed:
        """How the message asks for a reply, and who answers it; else why it gets none."""
        me = self._bot.user
        author = message.author
        if me is None or author.id == me.id:
            return Unaddressed.OWN
        if from_bot(message) and not self._settings.reply_to_bots:
            return Unaddressed.FROM_BOT
        if message.webhook_id and await self._own_webhook(message.webhook_id):
            return Unaddressed.PERSONA
        types = self._library.module.MessageType
        if message.type not in (types.default, types.reply):
            return Unaddressed.NOT_A_MESSAGE
        text = (message.content or "").strip()
        if not text and not message.attachments:
            return Unaddressed.EMPTY
        if text.startswith("!"):
            return Unaddressed.PREFIXED
        if message.guild is None or any(user.id == me.id for user in message.mentions):
            return DIRECTLY
        called, reply_to_persona = await self._personas_called(message, text)
        replied = message.reference.resolved if message.reference is not None else None
        if getattr(getattr(replied, "author", None), "id", None) == me.id and not reply_to_persona:
            return DIRECTLY  # a reply to the bot's own voice stays with it, whoever it names
        if called:
            return TurnRequest(Addressed.DIRECTLY, called)
        return PASSIVELY if await self._answers_every_message(message) else Unaddressed.NOT_CALLED

    async def _personas_called(self, message: Any, text: str) -> tuple[tuple[str, ...], bool]:
        """The personas of the server the message calls: the one whose message it replies to
        (as the store knows who posted it, else by the name the bot's webhook showed), then
        those it names; and whether it replies to a persona's message. None if the store is
        away (logged)."""
        try:
            await self._started()
            store = self._personas()
            if store is None:
                return (), False
            personas = await store.of_server(str(message.guild.id), cached=True)
            if not personas:
                return (), False
            replied_to = None
            reference = message.reference
            if reference is not None and reference.message_id is not None:
                posters = await store.posters([str(reference.message_id)])
                replied_to = posters.get(str(reference.message_id))
                if replied_to is None:
                    replied_to = await self._shown_poster(reference.resolved, personas)
        except Exception as error:
            if time.monotonic() - self._personas_warned_at >= WARN_EVERY_S:
                self._personas_warned_at = time.monotonic()
                log.warning(
                    "channel %s: could not read its personas: %r", message.channel.id, error
                )
            return (), False
        called = tuple(persona.key for persona in addressed(personas, text, replied_to))
        return called, replied_to is not None

    async def _shown_poster(self, replied: Any, personas: tuple[Persona, ...]) -> str | None:
        """The key of the persona a message of the bot's own webhook was posted by, from the
        name it shows (`shown_as`); None for any other message, or one Discord did not send."""
        webhook_id = getattr(replied, "webhook_id", None)
        if not webhook_id or not await self._own_webhook(webhook_id):
            return None
        persona = shown_as(personas, replied.author.name)
        return None if persona is None else persona.key

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
