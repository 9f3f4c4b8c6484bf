"""The personas' voice in a channel: the bot's own webhook there, and the port a persona posts by.

One webhook per channel (a thread's is its parent's), created by the bot itself (so it is the
application's, and components work on its messages), its token kept in the database
(`tomori.cast.personas.WebhookStore`) so a restart or another process reuses it, and created
anew when Discord says it is gone (10015, Unknown Webhook). Each message carries the persona's
name and avatar.

`PersonaPort` is a `ChannelPort` like any other: the writer cuts, paces and finishes a
persona's answer exactly as the bot's, never knowing who speaks. Where no webhook can post (a
direct message, no Manage Webhooks permission, Discord refusing the webhook, a send through it
failing) the persona speaks through the bot's own identity with its name before the text
(`named`), and the log says why, once per channel.

A persona with sprites wears one when its writer says so (`PersonaPort.wear`): the messages
sent from then on carry the sprite's avatar and the name `Name (label)` (`sprite_name`), and
back to its own avatar under its own name; without a webhook they show `**Name (label):**`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import Any

from tomori.cast.personas import Persona, named
from tomori.cast.sprites import wardrobe
from tomori.cast.webhook_store import StoredWebhook, WebhookStore
from tomori.delivery.port import (
    ChannelPort,
    DeliveryFailed,
    Urgency,
)
from tomori.delivery.sprite_markers import Wardrobe, sprite_name
from tomori.store import Database
from tomori_cog.discord_io import (
    PacedPort,
    WebhookGone,
    WriteMemory,
    call_failures,
    no_mass_mentions,
)
from tomori_cog.library import Library
from tomori_cog.pacing import DiscordPacing

log = logging.getLogger(__name__)

WEBHOOK_NAME = "Tomori personas"
REFUSED_FOR_S = 600.0
"""After Discord refused to create a channel's webhook (403), how long its personas speak as
the bot before asking again: each refusal counts toward the invalid requests that get a bot's
IP banned."""
MOST_KEPT = 10_000
"""Channels (and webhook IDs) remembered at most; past it, the oldest are read again."""


def home_of(library: Library, channel: Any) -> Any:
    """Where a channel's webhooks live: a thread's parent, else the channel itself."""
    if isinstance(channel, library.module.Thread) and channel.parent is not None:
        return channel.parent
    return channel


class Webhooks:
    """The bot's webhook of each channel, found in the store or created (see the module)."""

    def __init__(self, bot: Any, library: Library, pacing: DiscordPacing) -> None:
        self._bot = bot
        self._library = library
        self._pacing = pacing
        self._store: WebhookStore | None = None
        self._by_channel: OrderedDict[int, Any] = OrderedDict()
        self._ours: OrderedDict[int, bool] = OrderedDict()
        """Whether each webhook ID seen is the bot's own."""
        self._creating: dict[int, asyncio.Lock] = {}
        self._refused_until: OrderedDict[int, float] = OrderedDict()
        """Channels where Discord refused a webhook's creation, until when it is not asked."""
        self._told: OrderedDict[tuple[int, str], None] = OrderedDict()
        """Channels whose fallback was logged, and why: once per channel and reason."""

    def open(self, database: Database) -> None:
        self._store = WebhookStore(database)

    def close(self) -> None:
        self._store = None
        self._by_channel.clear()
        self._refused_until.clear()

    async def is_ours(self, webhook_id: int) -> bool:
        """Whether the bot created this webhook (its personas' messages are not answered)."""
        known = self._ours.get(webhook_id)
        if known is not None:
            return known
        if self._store is None:
            return False
        try:
            ours = str(webhook_id) in await self._store.ids([str(webhook_id)])
        except Exception as error:
            log.info("could not tell whether webhook %s is the bot's: %r", webhook_id, error)
            return False
        self._remember(self._ours, webhook_id, ours)
        return ours

    async def of(self, channel: Any) -> Any | None:
        """The channel's webhook, created if need be; None if the persona must speak as the
        bot (logged once per channel)."""
        if getattr(channel, "guild", None) is None:
            self.falls_back(channel, "a direct message has no webhooks")
            return None
        home = home_of(self._library, channel)
        cached = self._by_channel.get(home.id)
        if cached is not None:
            return cached
        lock = self._creating.setdefault(home.id, asyncio.Lock())
        try:
            async with lock:  # one creation per channel: the turns after it find it made
                return await self._found_or_created(channel, home)
        finally:
            if not lock.locked():
                self._creating.pop(home.id, None)

    async def _found_or_created(self, channel: Any, home: Any) -> Any | None:
        cached = self._by_channel.get(home.id)
        if cached is not None or self._store is None:
            return cached
        try:
            stored = await self._store.of_channel(str(home.id))
        except Exception as error:
            self.falls_back(channel, f"the database could not be read ({error!r})")
            return None
        if stored is None:
            stored = await self._created(channel, home)
            if stored is None:
                return None
        webhook = self._library.webhook(self._bot, int(stored.webhook_id), stored.token)
        self._remember(self._by_channel, home.id, webhook)
        self._remember(self._ours, webhook.id, True)
        return webhook

    async def _created(self, channel: Any, home: Any) -> StoredWebhook | None:
        assert self._store is not None
        me = getattr(home.guild, "me", None)
        if me is not None and not home.permissions_for(me).manage_webhooks:
            self.falls_back(channel, "the bot lacks the Manage Webhooks permission")
            return None
        if time.monotonic() < self._refused_until.get(home.id, 0.0):
            return None
        await self._pacing.call(Urgency.FIRST)
        lib = self._library.module
        try:
            created = await home.create_webhook(name=WEBHOOK_NAME)
        except lib.Forbidden as error:
            self._remember(self._refused_until, home.id, time.monotonic() + REFUSED_FOR_S)
            self.falls_back(channel, f"Discord refused to create a webhook ({error.text})")
            return None
        except call_failures(self._library) as error:
            self.falls_back(channel, f"creating its webhook failed ({error!r})")
            return None
        stored = StoredWebhook(str(created.id), str(created.token))
        try:
            await self._store.keep(str(home.id), stored)
        except Exception as error:  # it still posts; the next process creates its own
            log.warning("channel %s: its webhook could not be stored: %r", home.id, error)
        log.info("channel %s: created webhook %s for the personas", home.id, created.id)
        return stored

    async def gone(self, channel: Any, webhook: Any) -> None:
        """Discord says `webhook` no longer exists: the next `of` creates another."""
        home = home_of(self._library, channel)
        if self._by_channel.get(home.id) is webhook:
            del self._by_channel[home.id]
        log.info("channel %s: webhook %s is gone; creating another", home.id, webhook.id)
        if self._store is not None:
            try:
                await self._store.forget(str(home.id), str(webhook.id))
            except Exception as error:
                log.warning(
                    "channel %s: could not forget webhook %s: %r", home.id, webhook.id, error
                )

    def falls_back(self, channel: Any, why: str) -> None:
        """Log, once per channel and reason, that personas speak as the bot there."""
        told = (channel.id, why)
        if told in self._told:
            return
        self._remember(self._told, told, None)
        log.warning(
            "channel %s: personas speak as the bot with their name shown: %s", channel.id, why
        )

    @staticmethod
    def _remember[K, V](kept: OrderedDict[K, V], key: K, value: V) -> None:
        kept[key] = value
        kept.move_to_end(key)
        while len(kept) > MOST_KEPT:
            kept.popitem(last=False)


class WebhookPort(PacedPort):
    """`ChannelPort` over one webhook, as one persona, paced by the webhook's bucket too.

    `username` and `avatar_url` are what its next messages show (the persona's own, or a
    sprite's once its `PersonaPort` wears one)."""

    through_webhook = True

    def __init__(
        self,
        library: Library,
        channel: Any,
        pacing: DiscordPacing,
        memory: WriteMemory,
        webhook: Any,
        persona: Persona,
    ) -> None:
        super().__init__(library, channel, pacing, memory)
        self.webhook = webhook
        self.username = persona.name
        self.avatar_url = persona.avatar_url
        home = home_of(library, channel)
        self._thread: dict[str, Any] = {"thread": channel} if home is not channel else {}

    async def _reserve(self, urgency: Urgency) -> None:
        await self._pacing.webhook_write(self._channel.id, self.webhook.id, urgency)

    def _refused(self, wait: float) -> None:
        self._pacing.webhook_refused(self.webhook.id, wait)

    async def _post(self, content: str, reply_to: str | None) -> str:
        """A webhook cannot reply: its messages stand free (`reply_to` is not shown)."""
        avatar = {"avatar_url": self.avatar_url} if self.avatar_url else {}
        message = await self.webhook.send(
            content=content,
            username=self.username,
            allowed_mentions=no_mass_mentions(self._library),
            wait=True,
            **avatar,
            **self._thread,
        )
        return str(message.id)

    async def _revise(self, message_id: str, content: str) -> None:
        await self.webhook.edit_message(
            int(message_id),
            content=content,
            allowed_mentions=no_mass_mentions(self._library),
            **self._thread,
        )


def wardrobe_of(persona: Persona, port: PersonaPort) -> Wardrobe | None:
    """The persona's sprites as its writer switches them on `port` (None: it has none)."""
    return wardrobe(persona.name, persona.sprites, port.wear)


class PersonaPort:
    """A persona's `ChannelPort`: through the channel's webhook, else as the bot, named.

    Messages sent are edited the way they went.
    """

    def __init__(
        self,
        library: Library,
        channel: Any,
        pacing: DiscordPacing,
        webhooks: Webhooks,
        persona: Persona,
        bot_port: ChannelPort,
        memory: WriteMemory,
    ) -> None:
        self._library = library
        self._channel = channel
        self._pacing = pacing
        self._webhooks = webhooks
        self._persona = persona
        self._bot_port = bot_port
        self._memory = memory
        self._webhook: WebhookPort | None = None
        self._looked = False
        self._as_bot: dict[str, str] = {}
        """Messages sent through the bot's identity, and the name each shows."""
        self._sprite: str | None = None
        """The label of the sprite worn (None: the persona's own avatar)."""

    def wear(self, label: str | None) -> None:
        """The messages sent from now on wear sprite `label` (None: the persona's own avatar);
        a label the persona no longer has is its own avatar under the sprite's name."""
        self._sprite = label
        if self._webhook is not None:
            self._dress(self._webhook)

    def _dress(self, port: WebhookPort) -> None:
        avatars = {sprite.label: sprite.avatar_url for sprite in self._persona.sprites}
        port.username = sprite_name(self._persona.name, self._sprite)
        port.avatar_url = avatars.get(self._sprite or "", self._persona.avatar_url)

    async def _port(self) -> ChannelPort:
        if not self._looked:
            self._looked = True
            webhook = await self._webhooks.of(self._channel)
            if webhook is not None:
                self._webhook = WebhookPort(
                    self._library, self._channel, self._pacing, self._memory, webhook, self._persona
                )
                self._dress(self._webhook)
        return self._webhook if self._webhook is not None else self._bot_port

    async def writable(self, urgency: Urgency) -> None:
        await (await self._port()).writable(urgency)

    async def send(self, content: str, *, reply_to: str | None, urgency: Urgency) -> str:
        port = await self._port()
        for attempt in range(2):
            if port is self._bot_port:
                break
            try:
                return await port.send(content, reply_to=reply_to, urgency=urgency)
            except WebhookGone:
                assert self._webhook is not None
                await self._webhooks.gone(self._channel, self._webhook.webhook)
                self._looked, self._webhook = False, None
                port = await self._port() if attempt == 0 else self._bot_port
            except DeliveryFailed as error:  # refused, or failed: the bot's identity speaks
                self._webhooks.falls_back(self._channel, f"a webhook send failed ({error})")
                break
        shown = sprite_name(self._persona.name, self._sprite)
        message_id = await self._bot_port.send(
            named(shown, content), reply_to=reply_to, urgency=urgency
        )
        self._as_bot[message_id] = shown
        return message_id

    async def edit(self, message_id: str, content: str, *, urgency: Urgency) -> None:
        shown = self._as_bot.get(message_id)
        if shown is not None:
            await self._bot_port.edit(message_id, named(shown, content), urgency=urgency)
            return
        if self._webhook is None:
            raise DeliveryFailed("the webhook that sent this message is gone")
        await self._webhook.edit(message_id, content, urgency=urgency)
