"""Proxied members, as the cog reads them from Discord; the rule is `tomori.policy.proxies`.

A proxy's repost is a webhook message whose `application_id` is the proxy bot's. discord.py's
`Message` keeps that field; nextcord 3.2's does not, so on nextcord (whenever its `Message` has
no `application_id`) the cog reads it from the gateway's MESSAGE_CREATE payload, by wrapping
that event's parser in the bot's connection state for as long as the cog is loaded: the one
entry point both a gateway event and a test's arrival go through. Only webhook messages that
carry an application's ID are noted, and only the latest few hundred.

A proxy is present in a server when one of the known proxy bots is its member (as the member
cache shows it) or when this process saw a proxy repost there; only then do a person's
messages wait out the grace.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from tomori.config.settings import Settings, seconds
from tomori.policy.proxies import KNOWN_PROXIES, Original, ProxiedMessages
from tomori_cog.library import Library

log = logging.getLogger(__name__)

NOTED_APPLICATIONS = 512
"""How many webhook messages' application IDs are kept on nextcord until their listener runs
(it runs at once: this only bounds what a listener that never ran would leave behind)."""

MESSAGE_CREATE = "MESSAGE_CREATE"


class Proxies[T]:
    """Which messages are a proxy's reposts, where proxies are present, and the originals
    waiting to be reposted (`T`: how a message asked for its reply)."""

    def __init__(self, bot: Any, library: Library, settings: Settings) -> None:
        self.known = frozenset(KNOWN_PROXIES) | settings.proxy_bots
        self.waiting: ProxiedMessages[T] = ProxiedMessages(seconds(settings.proxy_grace_ms))
        self._seen_in: set[int] = set()
        """Servers where this process saw a proxy repost."""
        self._noted: OrderedDict[int, int] = OrderedDict()
        """nextcord: a webhook message's application ID, by message ID, until it is read."""
        self._parsers: dict[str, Callable[[Any], None]] | None = None
        self._parse: Callable[[Any], None] | None = None
        self._noting: Callable[[Any], None] | None = None
        if not hasattr(library.module.Message, "application_id"):
            self._note_applications(bot)

    # -- what a message is --------------------------------------------------------------------

    def application_id(self, message: Any) -> int | None:
        """The application whose webhook posted the message, if one did."""
        if not message.webhook_id:
            return None
        if self._parse is not None:
            return self._noted.pop(message.id, None)
        found = getattr(message, "application_id", None)
        return None if found is None else int(found)

    def is_repost(self, message: Any) -> bool:
        """Whether a known proxy posted the message (its server then has a proxy present)."""
        if self.application_id(message) not in self.known:
            return False
        if message.guild is not None:
            self._seen_in.add(int(message.guild.id))
        return True

    def present(self, guild: Any) -> bool:
        """Whether a person's message in `guild` waits out the grace: a proxy is there."""
        if guild is None or self.waiting.grace_s <= 0:
            return False
        if int(guild.id) in self._seen_in:
            return True
        return any(guild.get_member(bot_id) is not None for bot_id in self.known)

    # -- the waiting --------------------------------------------------------------------------

    def arrived(self, message: Any) -> bool:
        """A person's message arrived: where a proxy is present it is noted at once (before
        any await, so its deletion or repost is not missed) and waits out its grace
        (`reposted`); elsewhere it goes on at once (False)."""
        if not self.present(message.guild):
            return False
        self.waiting.expect(
            Original(
                message_id=int(message.id),
                channel_id=int(message.channel.id),
                author_id=int(message.author.id),
                text=message.content or "",
                files=len(message.attachments),
            )
        )
        return True

    async def reposted(self, message: Any, asked: T | None) -> bool:
        """Wait out an `arrived` message's grace, now that the reply rule said how it asks
        (None: for no reply): True if a proxy deleted or reposted it, or it asks for none
        (its repost is answered instead, if any: `claim`); False to answer it as it is."""
        taken = await self.waiting.taken(int(message.id), asked)
        if taken and asked is not None:
            log.info(
                "message %s in channel %s was proxied: its repost is answered instead",
                message.id,
                message.channel.id,
            )
        return taken

    def forget(self, message: Any) -> None:
        """An `arrived` message's reply rule failed: nothing waits for it any more."""
        self.waiting.forget(int(message.id))

    async def claim(self, repost: Any) -> tuple[Original, T | None] | None:
        """The original a proxy's repost stands for, and how it asked (None: for no reply);
        None if none (the repost is not answered)."""
        claimed = await self.waiting.claim(
            int(repost.channel.id), repost.content or "", len(repost.attachments)
        )
        if claimed is None or claimed[1] is None:
            log.info(
                "proxy repost %s in channel %s stands for no message to answer; not answered",
                repost.id,
                repost.channel.id,
            )
        return claimed

    # -- nextcord: the payload's application ID -----------------------------------------------

    def _note_applications(self, bot: Any) -> None:
        parsers = getattr(getattr(bot, "_connection", None), "parsers", None)
        if not isinstance(parsers, dict) or MESSAGE_CREATE not in parsers:
            log.warning(
                "this library's messages carry no application ID and its gateway parsers are"
                " not where expected: proxy reposts (PluralKit, Tupperbox) are not recognised"
            )
            return
        parse = parsers[MESSAGE_CREATE]
        noted = self._noted

        def noting(data: Any) -> None:
            if data.get("webhook_id") and data.get("application_id"):
                noted[int(data["id"])] = int(data["application_id"])
                while len(noted) > NOTED_APPLICATIONS:
                    noted.popitem(last=False)
            parse(data)

        parsers[MESSAGE_CREATE] = noting
        self._parsers, self._parse, self._noting = parsers, parse, noting

    def close(self) -> None:
        """The cog is unloaded: the bot's MESSAGE_CREATE parser is its own again (unless a
        cog loaded since wrapped it in turn: then this one stays inside, its few notes unread)."""
        if self._parsers is not None and self._parsers.get(MESSAGE_CREATE) is self._noting:
            assert self._parse is not None
            self._parsers[MESSAGE_CREATE] = self._parse
        self._parsers = self._noting = None
        self._noted.clear()
