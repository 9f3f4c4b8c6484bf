"""What a message must pass before any model is asked: the limits that protect a server.

In order, cheapest first: the bot can post in the channel (`deliverability`), bots have not
started `TOMORI_MAX_BOT_TURNS` turns in a row there, and the author is within their cooldown
and daily tokens in the server (`tomori.policy.limits`, kept by `tomori.policy.limit_store`).
A refused direct trigger is told when to try again (at most once per window, see
`tomori.policy.limits`); an autoreply message is refused silently, with a log line. A queued
message is checked again as its turn starts: the channel may have refused a send, or the turns
before it spent the day's tokens, since it was admitted. The database being away does not stop
the bot answering: the limits are then not applied to that message, and the log says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tomori.config.settings import Settings
from tomori.delivery.notices import post_notice_safely
from tomori.monitoring.why import Asked, Fate, FateSink, Step
from tomori.policy.limit_store import DIRECT_MESSAGES, UserLimitStore
from tomori.policy.limits import BotTurns, Refusal, UserLimits
from tomori.store import Database
from tomori.store.retry import InArrivalOrder
from tomori_cog.discord_io import EmbedNotices
from tomori_cog.library import Library
from tomori_cog.listener.deliverability import Deliverability
from tomori_cog.listener.reply_rule import from_bot
from tomori_cog.pacing import DiscordPacing

log = logging.getLogger(__name__)

UNREADABLE_SKIP_S = 5.0
"""After the limits could not be read, how long messages are let on without asking again."""


def guild_id_of(message: Any) -> int | None:
    """The server a message was sent in; None for a direct message."""
    return None if message.guild is None else int(message.guild.id)


def limit_scope(guild: Any) -> str:
    """The server a message's limits and tokens count in."""
    return DIRECT_MESSAGES if guild is None else str(guild.id)


@dataclass(frozen=True, slots=True)
class Asker:
    """Whom a message counts as for the limits: its author, or, for a proxy's repost of a
    member's message (`tomori_cog/listener/proxies.py`), that member, a person."""

    user_id: int
    human: bool

    @classmethod
    def author_of(cls, message: Any) -> Asker:
        return cls(int(message.author.id), not from_bot(message))


class AdmissionGate:
    def __init__(self, library: Library, settings: Settings, pacing: DiscordPacing) -> None:
        self._library = library
        self._pacing = pacing
        self.deliverability = Deliverability(library)
        self._bot_turns = BotTurns.capped_at(settings.max_bot_turns)
        self._store: UserLimitStore | None = None
        self._why: FateSink | None = None
        self._in_order = InArrivalOrder()
        self._unreadable_until = 0.0

    def open(self, database: Database, why: FateSink) -> None:
        """`why` hears what the gate refused ("Why no answer?")."""
        self._store = UserLimitStore(database)
        self._why = why

    def heard(self, message: Any) -> None:
        """Every message the bot sees: a human's ends the channel's run of bot turns."""
        if not from_bot(message):
            self._bot_turns.human_spoke(str(message.channel.id))

    async def admits_in_order(
        self,
        message: Any,
        asker: Asker,
        surface_errors: bool,
        limits_for: Callable[[int | None], Awaitable[UserLimits]],
    ) -> bool:
        """`admits`, one message of a channel at a time in arrival order: the checks may wait
        for the database, and a later message must not overtake an earlier one to the lock
        store. The caller submits an admitted message with no await in between, so it takes
        its place in the lock store's own arrival order before the next message is checked."""
        async with self._in_order.turn_of(str(message.channel.id)):
            limits = await limits_for(guild_id_of(message))
            return await self.admits(message, asker, surface_errors, limits)

    async def admits(
        self, message: Any, asker: Asker, surface_errors: bool, limits: UserLimits
    ) -> bool:
        """Whether the message may start a turn; its asker is told why not where due."""
        channel = message.channel
        if not self.deliverability.allows(channel):
            self._note(message, str(asker.user_id), Step(Fate.CANNOT_POST))
            return False
        channel_id = str(channel.id)
        bot = not asker.human
        if bot and not self._bot_turns.allows(channel_id):
            self._note(message, str(asker.user_id), Step(Fate.BOT_LOOP))
            log.info(
                "message %s in channel %s: bots started %d turns in a row there; not answered",
                message.id,
                channel_id,
                self._bot_turns.limit,
            )
            return False
        if limits.active:
            user = str(asker.user_id)
            refusal = await self._judged(message, user, limits, surface_errors, arriving=True)
            if refusal is not None:
                await self._refused(message, user, refusal, surface_errors)
                return False
        if bot:
            self._bot_turns.started(channel_id)
        return True

    async def may_start(
        self,
        channel: Any,
        message: Any,
        user: str,
        surface_errors: bool,
        limits: UserLimits,
        *,
        retake: bool = False,
    ) -> bool:
        """Whether a turn about to start (maybe from the queue) may still ask a model; `user`
        is its requester (for a proxy's repost, the member who wrote it). A new take of the
        message's answer (`retake`) is held alike, but is no new message: what refuses it is
        not added to the message's "Why no answer?" account, which tells what became of the
        message itself."""
        noted = not retake
        if not self.deliverability.allows(channel):
            if noted:
                self._note(message, user, Step(Fate.CANNOT_POST))
            return False
        refusal = await self._judged(message, user, limits, surface_errors, arriving=False)
        if refusal is None:
            return True
        await self._refused(message, user, refusal, surface_errors, noted=noted)
        return False

    async def command_refusal(
        self, guild_id: int, user_id: int, key: str, limits: UserLimits
    ) -> Refusal | None:
        """A command that starts a turn (`/scene`, keyed by its interaction) is held to its
        member's cooldown and daily tokens as a message is; None if it may go on (or the
        limits cannot be read now: logged). Whoever ran it is always told why not."""
        if not limits.active:
            return None
        assert self._store is not None  # opened at start-up
        try:
            return await self._store.admit(str(guild_id), str(user_id), key, limits, tells=False)
        except Exception as error:
            if not self._store.is_database_error(error):
                raise
            log.warning("could not read the limits of user %s: %r; not held", user_id, error)
            return None

    async def _judged(
        self, message: Any, user: str, limits: UserLimits, tells: bool, *, arriving: bool
    ) -> Refusal | None:
        assert self._store is not None  # opened at start-up
        scope = limit_scope(message.guild)
        if time.monotonic() < self._unreadable_until:
            log.debug("message %s is not held to the limits: they could not be read", message.id)
            return None
        try:
            if arriving:
                return await self._store.admit(scope, user, str(message.id), limits, tells=tells)
            return await self._store.quota_spent(scope, user, limits, tells=tells)
        except Exception as error:
            if not self._store.is_database_error(error):
                raise
            # Each message after it would wait out the statement timeout in turn, one after the
            # other in its channel: for a while, let them on without asking.
            self._unreadable_until = time.monotonic() + UNREADABLE_SKIP_S
            log.warning(
                "could not read the limits of user %s in %s (%r); message %s, and any in the"
                " next %g s, is not held to them",
                user,
                scope,
                error,
                message.id,
                UNREADABLE_SKIP_S,
            )
            return None

    def _note(self, message: Any, user: str, step: Step) -> None:
        if self._why is not None:
            self._why.note(Asked(str(message.id), str(message.channel.id), user), step)

    async def _refused(
        self, message: Any, user: str, refusal: Refusal, surface_errors: bool, *, noted: bool = True
    ) -> None:
        if noted:
            self._note(message, user, Step(Fate.REFUSED, refusal.limit, until=refusal.retry_at))
        log.info(
            "message %s in channel %s by %s: over the %s until %.0f; not answered%s",
            message.id,
            message.channel.id,
            user,
            refusal.limit,
            refusal.retry_at,
            ", told" if surface_errors and refusal.notify else "",
        )
        if surface_errors and refusal.notify:
            notices = EmbedNotices(
                self._library, message.channel, self._pacing, reply_to=message.id
            )
            await post_notice_safely(notices, refusal.notice, str(message.channel.id))
