"""Which Discord messages become turns: the cog's listener, written once for both libraries.

A message the bot sees is remembered (the history's memory), may be a proxy's repost of a
member's message (answered as theirs), may be a stop word (it stops its user's answer), and is
answered or not by the reply rule; one to answer passes the gate (deliverability, bot loops, the
member's limits) in arrival order and is queued in the channel's lock as a `TurnRequest` (a
direct one shows its queued mark once it waited a second). Edits and deletes reach a message
still waiting for its turn; one dropped for age, or cleared by a /kill or stop word, shows so,
and its asker is told (unless the stop was theirs), as its server's settings say. Each step of
the way is noted for "Why no answer?" (`tomori.monitoring.why`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from tomori.cast.scenes import SCENE_DROPPED
from tomori.delivery.notices import (
    CLEARED_BY_KILL,
    GENERATION_ERROR,
    NOT_ANSWERED,
    QUEUE_FULL,
    Notice,
    cleared_by_kill,
    post_notice_safely,
    respond_dropped,
)
from tomori.delivery.progress import Stage
from tomori.locks import Admission, ChannelLocks, Trigger
from tomori.monitoring.why import ADMITTED, Asked, Fate, FateSink, Step
from tomori.policy.interruptions import follow_up_key, is_stop_word
from tomori.policy.limits import BotTurns, UserLimits
from tomori.store.first_come import arrived
from tomori.turns import TurnRequest
from tomori.turns.cleared import cleared_askers
from tomori_cog.discord_io import EmbedNotices, find_channel
from tomori_cog.listener.gate import Asker, guild_id_of
from tomori_cog.listener.proxies import Proxies
from tomori_cog.listener.reply_rule import ReplyRule
from tomori_cog.surface import DiscordParts

log = logging.getLogger(__name__)


class Intake:
    """The cog's listener (see the module docstring)."""

    def __init__(
        self,
        parts: DiscordParts,
        *,
        reply_rule: ReplyRule,
        proxies: Proxies[TurnRequest],
        drawn_in: BotTurns,
        locks: Callable[[], Awaitable[ChannelLocks]],
        why: Callable[[], FateSink | None],
    ) -> None:
        """`locks` starts the cog if it is not yet, and gives its channel locks; `why` is
        where each message's way is noted once it has started (None before)."""
        self._why = why
        self._parts = parts
        self._reply_rule = reply_rule
        self.proxies = proxies
        self._drawn_in = drawn_in
        self._locks = locks

    async def handle_message(self, message: Any) -> None:
        """A message the bot saw (see the module docstring)."""
        # When it came, not when its checks were done: a /kill after it clears it, and its
        # queue age counts from here, however long the checks waited for the database.
        received_at = time.time()
        arrived(received_at)  # the database serves this message's work before later ones'
        self._parts.memory.seen(
            message
        )  # before any await: memory sees a channel's messages in order
        self._parts.gate.heard(message)
        self._parts.takes.heard(message)  # a new message freezes the last answer's takes
        if self.proxies.is_repost(message):
            claimed = await self.proxies.claim(message)
            if claimed is not None:
                original, asked = claimed
                # the repost stands for it: not shown again, though the proxy may delete it late
                self._parts.history.unshown.add(str(original.message_id))
                asker = Asker(original.author_id, human=True)
                if await self._stopped_by(message, asker, received_at):
                    return  # the member's stop word, its tags stripped by the proxy
                if asked is not None:
                    await self._admit(message, asked, asker, received_at)
            return
        asker = Asker.author_of(message)
        waits = asker.human and self.proxies.arrived(message)
        try:
            addressed = await self._asked_by(message, asker, received_at)
        except BaseException:
            if waits:
                self.proxies.forget(message)
            raise
        if waits and await self.proxies.reposted(message, addressed):
            return  # a proxy took it (its repost is answered instead), or it asks for nothing
        if addressed is None:
            return
        await self._admit(message, addressed, asker, received_at)

    async def _asked_by(self, message: Any, asker: Asker, received_at: float) -> TurnRequest | None:
        """How the message asks for a reply; None if it asks for none (a stop word that
        stopped an answer among them)."""
        if asker.human:
            self._drawn_in.human_spoke(str(message.channel.id))
            if await self._stopped_by(message, asker, received_at):
                return None
        return await self._reply_rule.addressed(message)

    async def _admit(
        self, message: Any, addressed: TurnRequest, asker: Asker, received_at: float
    ) -> None:
        """Queue the message's turn (or start it) for `asker`, if the gate lets it on."""
        locks = await self._locks()
        surface_errors = addressed.surfaces_errors
        follows: str | None = None

        async def limits_for(guild_id: int | None) -> UserLimits:
            # Read with the limits, in arrival order: an await outside it would let a later
            # message of the channel overtake this one on its way to the lock store.
            nonlocal follows
            follows = await self._follow_up_key(message, asker, addressed)
            return await self._parts.config.user_limits(guild_id)

        if not await self._parts.gate.admits_in_order(message, asker, surface_errors, limits_for):
            return  # else no await before submit: see admits_in_order
        trigger = addressed.trigger(
            str(message.channel.id),
            str(message.id),
            str(asker.user_id),
            received_at=received_at,
            follow_up_key=follows,
        )
        self._parts.live_messages.keep(trigger.message_id or "", message)
        admission = await locks.submit(trigger)
        if admission in ADMITTED:
            self._note(trigger, Step(ADMITTED[admission]))
        if admission in (Admission.IGNORED, Admission.FAILED, Admission.QUEUE_FULL):
            self._parts.live_messages.take(trigger.message_id or "")
        if admission in (Admission.QUEUED, Admission.FOLLOW_UP) and surface_errors:
            visibility = await self._parts.config.visibility(guild_id_of(message))
            self._parts.marks.queued(message.channel, str(message.id), visibility.stages)
        if admission is Admission.QUEUE_FULL and surface_errors:
            notices = EmbedNotices(
                self._parts.library, message.channel, self._parts.pacing, reply_to=message.id
            )
            await post_notice_safely(notices, QUEUE_FULL, trigger.channel_id)
        if admission is Admission.FAILED:
            log.error(
                "message %s in channel %s could not be admitted", message.id, trigger.channel_id
            )
            if surface_errors:
                notices = EmbedNotices(self._parts.library, message.channel, self._parts.pacing)
                await post_notice_safely(notices, GENERATION_ERROR, trigger.channel_id)
        log.debug("message %s in channel %s: %s", message.id, message.channel.id, admission)

    async def _stopped_by(self, message: Any, asker: Asker, received_at: float) -> bool:
        """A stop word of the user being answered in the channel stops their answer and clears
        what they sent before it (`TOMORI_STOP_WORDS`), even what is still on its way to the
        queue; anyone else's is an ordinary message."""
        if not is_stop_word(message.content or "", self._parts.settings.stop_words):
            return False
        locks = await self._locks()
        # hidden from the model at once: the turn after the stopped one may read the channel
        # before the stop returns
        self._parts.history.unshown.add(str(message.id))
        stopped = False
        try:
            stopped = await locks.stop_for(str(message.channel.id), str(asker.user_id), received_at)
        finally:
            if not stopped:
                self._parts.history.unshown.discard(str(message.id))
        return stopped

    async def _follow_up_key(self, message: Any, asker: Asker, asked: TurnRequest) -> str | None:
        """Whom the message is addressed to, for follow-ups (None: it neither is one nor
        takes any): a person's message, where follow-ups are on (`/tomori followups`)."""
        if not asker.human or not await self._parts.config.follow_ups(guild_id_of(message)):
            return None
        return follow_up_key(asked.personas)

    def messages_changed(self, message_ids: Iterable[int]) -> None:
        """Messages were edited or deleted (the cogs' raw listeners): a queued trigger among
        them is answered as it is when its turn starts, and a deleted one not at all."""
        self._parts.live_messages.changed(message_ids)

    def messages_deleted(self, message_ids: Iterable[int]) -> None:
        """Messages were deleted (the cogs' raw listeners): as `messages_changed`, and one
        waiting for a proxy's repost is not answered (its repost may be)."""
        self.proxies.waiting.deleted(message_ids)
        self._parts.live_messages.changed(message_ids)

    async def tell_expired(self, trigger: Trigger) -> None:
        """A queued message dropped unanswered: a direct trigger hears so, as a reply to it;
        one the channel answers on its own stays silent (the log says it). A command's turn
        has no message: the channel hears so, naming a `/respond`'s asker."""
        self._parts.live_messages.take(trigger.message_id or "")
        self._note(trigger, Step(Fate.DROPPED_FOR_AGE))
        request = TurnRequest.of(trigger)
        if request.scene is not None:
            await self._tell_channel(trigger.channel_id, SCENE_DROPPED)
            return
        if request.respond is not None and trigger.requester_id is not None:
            await self._tell_channel(trigger.channel_id, respond_dropped(trigger.requester_id))
            return
        if not request.surfaces_errors or trigger.message_id is None:
            log.info(
                "message %s in channel %s dropped unanswered; not told (autoreply)",
                trigger.message_id,
                trigger.channel_id,
            )
            return
        channel = await find_channel(self._parts.bot, self._parts.library, int(trigger.channel_id))
        if channel is None:
            return
        visibility = await self._parts.config.visibility(_guild_id(channel))
        self._parts.marks.ended(channel, trigger.message_id, visibility.stages, Stage.FAILED)
        if not visibility.replies:
            log.info("message %s dropped unanswered; told as the server says", trigger.message_id)
            return
        notices = EmbedNotices(
            self._parts.library, channel, self._parts.pacing, reply_to=int(trigger.message_id)
        )
        await post_notice_safely(notices, NOT_ANSWERED, trigger.channel_id)

    async def tell_cleared(self, triggers: Sequence[Trigger], by: str | None) -> None:
        """Queued messages a /kill or stop word of `by` cleared in one channel: each direct one
        shows it stopped; whose another's /kill cleared hears so once, by a reply to their
        newest, or named in one notice (`tomori.turns.cleared`); `by` knows."""
        others = [trigger for trigger in triggers if trigger.requester_id != by]
        for trigger in triggers:
            own = trigger.requester_id == by
            self._note(trigger, Step(Fate.CLEARED_OWN if own else Fate.CLEARED))
        askers = cleared_askers(others)
        channel_id = triggers[0].channel_id
        marked = [
            message_id
            for trigger in triggers
            if (message_id := trigger.message_id) is not None
            and TurnRequest.of(trigger).surfaces_errors  # a direct one: it may show marks
        ]
        if not (askers.replied or askers.named or marked):
            return
        channel = await find_channel(self._parts.bot, self._parts.library, int(channel_id))
        if channel is None:
            return
        if marked:  # a queued mark any process put on them comes down
            visibility = await self._parts.config.visibility(_guild_id(channel))
            for message_id in marked:
                self._parts.marks.ended(channel, message_id, visibility.stages, Stage.STOPPED)
        library, pacing = self._parts.library, self._parts.pacing
        for message_id in askers.replied:
            notices = EmbedNotices(library, channel, pacing, reply_to=int(message_id))
            await post_notice_safely(notices, CLEARED_BY_KILL, channel_id)
        if askers.named:
            notice = cleared_by_kill(askers.named)
            await post_notice_safely(EmbedNotices(library, channel, pacing), notice, channel_id)

    def _note(self, trigger: Trigger, step: Step) -> None:
        """Note a step of the way of the trigger's message (a command's has none)."""
        why = self._why()
        if why is not None and trigger.message_id is not None:
            asked = Asked(trigger.message_id, trigger.channel_id, trigger.requester_id)
            why.note(asked, step)

    async def _tell_channel(self, channel_id: str, notice: Notice) -> None:
        channel = await find_channel(self._parts.bot, self._parts.library, int(channel_id))
        if channel is not None:
            notices = EmbedNotices(self._parts.library, channel, self._parts.pacing)
            await post_notice_safely(notices, notice, channel_id)


def _guild_id(channel: Any) -> int | None:
    guild = getattr(channel, "guild", None)
    return None if guild is None else int(guild.id)
