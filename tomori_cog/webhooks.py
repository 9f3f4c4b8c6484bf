"""The personas' voice in a channel: the bot's own webhook there, and the port that posts by it.

One webhook per channel (a thread's is its parent's), created by the bot itself (so it is the
application's, and components work on its messages), its token kept in the database
(`tomori.cast.webhook_store.WebhookStore`) so a restart or another process reuses it, and created
anew when Discord says it is gone (10015, Unknown Webhook). Each message carries the persona's
name and avatar.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Collection
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tomori.cast.personas import Persona
from tomori.cast.webhook_store import StoredWebhook, WebhookStore
from tomori.delivery.port import (
    Urgency,
)
from tomori.store import Database
from tomori.store.sealed import SecretBox
from tomori_cog.discord_io import (
    MaybeDelivered,
    PacedPort,
    WriteMemory,
    call_failures,
)
from tomori_cog.library import Library
from tomori_cog.pacing import DiscordPacing

if TYPE_CHECKING:
    from tomori_cog.stop_buttons import AnswerButton

log = logging.getLogger(__name__)

WEBHOOK_NAME = "Tomori personas"
REFUSED_FOR_S = 600.0
"""After Discord refused to create a channel's webhook (403), how long its personas speak as
the bot before asking again: each refusal counts toward the invalid requests that get a bot's
IP banned."""
MOST_KEPT = 10_000
"""Channels (and webhook IDs) remembered at most; past it, the oldest are read again."""
LOOKED_AT = 50
"""The channel's messages read for a post that may have landed: a page of Discord's history."""
CLOCK_SLACK_S = 60.0
"""How long before its post the messages are read from: the bot's clock and Discord's differ."""


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
        self._database: Database | None = None
        self._store: WebhookStore | None = None
        """Made at first use, once the bot is logged in: its key is the bot's token."""
        self._by_channel: OrderedDict[int, Any] = OrderedDict()
        self._ours: OrderedDict[int, bool] = OrderedDict()
        """Whether each webhook ID seen is the bot's own."""
        self._creating: dict[int, asyncio.Lock] = {}
        self._refused_until: OrderedDict[int, float] = OrderedDict()
        """Channels where Discord refused a webhook's creation, until when it is not asked."""
        self._told: OrderedDict[tuple[int, str], None] = OrderedDict()
        """Channels whose fallback was logged, and why: once per channel and reason."""

    def open(self, database: Database) -> None:
        self._database = database

    def close(self) -> None:
        self._database = self._store = None
        self._by_channel.clear()
        self._refused_until.clear()

    async def is_ours(self, webhook_id: int) -> bool:
        """Whether the bot created this webhook (its personas' messages are not answered)."""
        known = self._ours.get(webhook_id)
        if known is not None:
            return known
        try:
            store = await self._opened_store()
            if store is None:
                return False
            ours = str(webhook_id) in await store.ids([str(webhook_id)])
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
        if cached is not None:
            return cached
        try:
            store = await self._opened_store()
            if store is None:
                return None
            stored = await store.of_channel(str(home.id))
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

    async def channels_gone(self, channel_ids: Collection[int]) -> None:
        """Discord says these channels are gone (deleted, or the bot left their server): their
        webhooks went with them, and their rows are forgotten (a row per channel would
        otherwise outlive every channel the bot ever posted in)."""
        for channel_id in channel_ids:
            self._by_channel.pop(channel_id, None)
        try:
            store = await self._opened_store()
            if store is not None:
                await store.forget_channels(str(channel_id) for channel_id in channel_ids)
        except Exception as error:
            log.warning("could not forget the webhooks of channels gone: %r", error)

    async def _opened_store(self) -> WebhookStore | None:
        """The store, its key the bot's token (None: not started, or not logged in); the
        first time, the tokens an earlier version stored in clear are sealed."""
        if self._store is None and self._database is not None:
            token = self._library.bot_token(self._bot)
            if token is None:
                return None
            store = WebhookStore(self._database, SecretBox(token))
            sealed = await store.seal_all()
            if sealed:
                log.info("sealed %d webhook tokens an earlier version stored in clear", sealed)
            self._store = store
        return self._store

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
        involved: Collection[int] = (),
        button: AnswerButton | None = None,
    ) -> None:
        super().__init__(library, channel, pacing, memory, involved, button)
        self.webhook = webhook
        self.username = persona.name
        self.avatar_url = persona.avatar_url
        home = home_of(library, channel)
        self._thread: dict[str, Any] = {"thread": channel} if home is not channel else {}

    async def _reserve(self, urgency: Urgency) -> None:
        await self._pacing.webhook_write(self._channel.id, self.webhook.id, urgency)

    def _refused(self, wait: float) -> None:
        self._pacing.webhook_refused(self.webhook.id, wait)

    async def _post(self, content: str, reply_to: str | None, nonce: str, view: Any) -> str:
        """A webhook cannot reply: its messages stand free (`reply_to` is not shown); Execute
        Webhook takes no nonce. Its buttons work: the bot made the webhook."""
        avatar = {"avatar_url": self.avatar_url} if self.avatar_url else {}
        buttons = {} if view is None else {"view": view}
        message = await self.webhook.send(
            content=content,
            username=self.username,
            allowed_mentions=self._pings,
            wait=True,
            **avatar,
            **buttons,
            **self._thread,
        )
        return str(message.id)

    async def _unbutton(self, message_id: str) -> None:
        await self._pacing.tidy(self._channel.id, self.webhook.id)
        await self.webhook.edit_message(int(message_id), view=None, **self._thread)

    async def _landed(self, shown: str, asked_at: float, failed: MaybeDelivered) -> str | None:
        """Execute Webhook takes no nonce: the channel's messages since just before the post
        say whether it landed (its ID), or not (None: asked again); unread, `failed` stands."""
        lib = self._library.module
        since = lib.utils.time_snowflake(
            datetime.fromtimestamp(asked_at - CLOCK_SLACK_S, UTC), high=False
        )
        try:
            await self._pacing.read()
            after = self._channel.history(limit=LOOKED_AT, after=lib.Object(id=since))
            async for message in after:
                if message.webhook_id == self.webhook.id and message.content == shown:
                    return str(message.id)
        except call_failures(self._library) as error:
            log.info("channel %s: could not tell if a post landed: %r", self._channel.id, error)
            raise failed from error
        return None

    async def _revise(self, message_id: str, content: str, view: Any) -> None:
        buttons = {} if view is None else {"view": view}
        await self.webhook.edit_message(
            int(message_id),
            content=content,
            allowed_mentions=self._pings,
            **buttons,
            **self._thread,
        )
