"""`ChannelLocks`: one turn per channel, the rest queued in order, across every process.

It is the single answer to "is this channel busy". A trigger submitted for a free channel
starts a turn (in a task this registry owns); one for a busy channel is queued and served after
the running turn, as a reply to its trigger. Lock rows and queued triggers live in the database
(`LockBackend`), so a restart replays the queue and two processes never both hold a channel;
what only this process can know of a turn lives in its `Lease`.

A /kill may reach a process that does not run the channel's turn. It writes the stop request
into the lock row, and the owner hears it (`StopRequestReader`) and stops the turn as a local
/kill would. A turn stopped by /kill discards the queue when it releases, so the queue /kill
just emptied is not refilled by what came before it (`Stops.dropped_for_a_kill`). It drops at
once what is not on the wire, so it hands the channel on within milliseconds: a trigger that
comes meanwhile waits for that (`UNWIND_WAIT_S` at most) and is then taken, not lost. One that
finds another process's turn unwinding is ignored, as every trigger was while a kill unwound
in the bot this cog's behaviour was taken from.

A database that is busy or out of reach loses nothing: admission, release and /kill are
retried (`tomori.store.retry`) until they succeed, admissions of one channel in arrival order, and a
trigger still not admitted after `TOMORI_QUEUE_MAX_AGE_MS` is `FAILED`, as is one that finds
`tomori.store.retry.MAX_HELD` triggers held in memory already.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from tomori.config.settings import Settings, seconds
from tomori.locks.backend import LockBackend
from tomori.locks.expiries import ExpiryNotices
from tomori.locks.loops import BackgroundLoops
from tomori.locks.recovery import Recovery
from tomori.locks.rules import LockState
from tomori.locks.stopped import StoppedAnswers
from tomori.locks.stops import Stops
from tomori.locks.supervisor import CLOSING_GRACE_S, TurnSupervisor
from tomori.locks.vocabulary import (
    Admission,
    ClearedTeller,
    ExpiryTeller,
    KillOutcome,
    KillReason,
    Trigger,
    Turn,
    TurnRunner,
    TurnStop,
)
from tomori.store.retry import GaveUp, InArrivalOrder, until_not_busy

log = logging.getLogger("tomori.locks")

UNWIND_WAIT_S = 2.0
"""How long a trigger waits for a turn this process runs, stopped by /kill, to hand its channel
on (milliseconds, as it drops what is not on the wire); past it (a tool deaf to cancellation),
the trigger is ignored."""


class ChannelLocks:
    """The channel lock registry of one process (or one bot instance) on one database."""

    def __init__(
        self,
        backend: LockBackend,
        settings: Settings,
        run_turn: TurnRunner,
        tell_expired: ExpiryTeller | None = None,
        tell_cleared: ClearedTeller | None = None,
    ) -> None:
        """`tell_expired` is told of each queued trigger dropped unanswered, and `tell_cleared`
        of the triggers each /kill or stop word cleared, once across every process (the one
        whose transaction dropped them), in tasks this registry owns."""
        self._backend = backend
        self._lock_timeout_s = seconds(settings.channel_lock_timeout_ms)
        self._queue_max_age_s = seconds(settings.queue_max_age_ms)
        self.stopped = StoppedAnswers()
        """What stops left unanswered in each channel: the next turns' models are told."""
        self._turns = TurnSupervisor(backend, run_turn, lambda: self._closing, self.stopped)
        self._upkeep = BackgroundLoops()
        """Progress and stop requests: they serve the turns running, until the last ends."""
        self._recovery = Recovery(backend, self._turns, self._lock_timeout_s)
        """The heartbeat and departures: they begin turns for channels others left."""
        self._in_order = InArrivalOrder()
        self._closing = False
        self._expiries = ExpiryNotices(tell_expired, tell_cleared)
        self._stops = Stops(
            backend,
            self._turns,
            self._in_order,
            self._until,
            self._lock_timeout_s,
            settings,
            self._expiries.cleared,
            self.stopped,
        )
        backend.report_expired(self._expiries.dropped)

    @property
    def instance_id(self) -> str:
        return self._backend.instance_id

    async def live_processes(self) -> int:
        """How many processes of the bot serve from this database now, this one included."""
        return await self._backend.live_processes()

    # -- life cycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Register this instance and recover channels whose owner is gone, replaying queues."""
        backend = self._backend
        await backend.register()
        self._upkeep.start(
            "recording progress", self._turns.progress.step, pause_after_failure_s=1.0
        )
        self._upkeep.start(
            "reading stop requests", self._turns.stop_requests.step, pause_after_failure_s=0.25
        )
        await self._recovery.start()
        await backend.forget_dead_instances()

    async def close(self) -> None:
        """Stop every running turn and release its lock; queued triggers stay for a process
        still running (or the next start), and a turn cut before it showed anything goes back
        to the head of its queue, so that a restart leaves no message unanswered."""
        self._closing = True
        await self._recovery.close()  # first: a recovery must not begin a turn from now on
        # A submit already inside its transaction begins its turn right after it commits;
        # waiting for the store once lets every such turn start, so the loop below sees it.
        # (Retries of a busy database stop now: closing is their signal to give up.)
        await self._backend.wait_for_pending()
        await self._turns.stop_all()
        # Only now: until each turn has handed its channel on, its progress (that it answered,
        # above all) must still reach the database, for whoever recovers a hand-off cut short.
        await self._upkeep.close()
        await self._expiries.close()
        await self._backend.close()
        try:
            async with asyncio.timeout(CLOSING_GRACE_S):
                await self._backend.unregister()
        except TimeoutError:
            log.warning("the database did not answer; this instance's row expires on its own")
        except Exception as error:  # a busy database must not stop a close: the row goes stale
            if not self._backend.is_database_error(error):
                raise
            log.warning("could not remove this instance's row; it expires with its heartbeat")

    # -- admission ----------------------------------------------------------------------------

    async def submit(self, trigger: Trigger) -> Admission:
        """Start a turn for `trigger`, or queue it behind the channel's running turn.

        A database that is busy or out of reach is waited out, in arrival order per channel,
        for as long as the trigger could wait in the queue; past that it is `FAILED`, as it is
        at once when the database refuses it for good.
        """
        if self._in_order.is_full(f"message {trigger.message_id} in channel {trigger.channel_id}"):
            return Admission.FAILED
        async with self._in_order.turn_of(trigger.channel_id):
            deadline = trigger.received_at + self._queue_max_age_s
            try:
                return await until_not_busy(
                    f"admitting message {trigger.message_id} in channel {trigger.channel_id}",
                    lambda: self._admit(trigger),
                    self._backend.is_transient,
                    keep_trying=self._until(deadline),
                )
            except GaveUp:
                return Admission.IGNORED if self._closing else Admission.FAILED
            except Exception as error:
                # Not worth another attempt (a broken schema, a full disk): the message is not
                # admitted, and says so, rather than vanishing in an unhandled error.
                if not self._backend.is_database_error(error):
                    raise
                log.exception(
                    "could not admit message %s in channel %s",
                    trigger.message_id,
                    trigger.channel_id,
                )
                return Admission.FAILED

    def _until(self, deadline: float) -> Callable[[], bool]:
        """Whether a write the database keeps refusing is still worth another attempt."""
        return lambda: not self._closing and time.time() < deadline

    async def _admit(self, trigger: Trigger) -> Admission:
        """One attempt at `submit`, in one transaction."""
        channel_id = trigger.channel_id
        if self._closing:
            return Admission.IGNORED
        lease = self._turns.lease(channel_id)
        if lease is not None and lease.killed():
            lease = await self._turns.unwound(lease, UNWIND_WAIT_S)
            if self._closing:
                return Admission.IGNORED
            if lease is not None and lease.killed():
                log.info("ignoring a message for channel %s: /kill is unwinding", channel_id)
                return Admission.IGNORED
        if self._stops.dropped_for_a_kill(trigger):
            # It came before a /kill (or its author's stop word) while the database was away
            # or its limits were read: the queue that cleared would have held it.
            log.info(
                "dropping message %s of channel %s: a /kill or its author's stop came after it",
                trigger.message_id,
                channel_id,
            )
            return Admission.IGNORED
        if lease is not None and lease.is_stale(self._lock_timeout_s):
            self._turns.force_release(lease)
            lease = None
        admitted = await self._backend.admit(trigger, self._turns.given_up_in(channel_id))
        if admitted.already is not None:
            return self._admitted_before(trigger, admitted.already, admitted.turn)
        if admitted.verdict.is_free:
            self._turns.row_replaced(channel_id)  # its row is replaced
        if admitted.verdict is LockState.STOPPING:
            log.info("ignoring a message for channel %s: /kill is unwinding", channel_id)
            return Admission.IGNORED
        if admitted.full:
            log.info(
                "message %s of channel %s: its author's queue is full",
                trigger.message_id,
                channel_id,
            )
            return Admission.QUEUE_FULL
        if admitted.follow_up:
            running = self._turns.lease(channel_id)
            if running is not None:  # at once; another owner hears it from the lock row
                running.interrupt(KillReason.FOLLOW_UP)
            return Admission.FOLLOW_UP
        if admitted.turn is None:
            return Admission.QUEUED
        self._turns.begin(admitted.turn)
        return Admission.STARTED if admitted.turn.trigger is trigger else Admission.QUEUED

    def _admitted_before(
        self, trigger: Trigger, already: Admission, ours: Turn | None
    ) -> Admission:
        """A message admitted before: begin its turn if ours and not begun (the reply to the
        commit that started it was lost), else say where it stands; never admit it twice."""
        lease = self._turns.lease(trigger.channel_id)
        if ours is not None and (lease is None or lease.turn.turn_id != ours.turn_id):
            log.warning("beginning turn %s, whose admission's reply was lost", ours.turn_id)
            self._turns.begin(ours)
            return Admission.STARTED
        log.info("message %s was admitted before: %s", trigger.message_id, already)
        return Admission.QUEUED if already is Admission.QUEUED else Admission.IGNORED

    # -- /kill --------------------------------------------------------------------------------

    async def kill(self, channel_id: str, requester_id: str | None) -> KillOutcome:
        """Clear the channel's queue and stop its running turn, if any (see `Stops.kill`)."""
        return await self._stops.kill(channel_id, requester_id)

    async def stop_for(
        self, channel_id: str, requester_id: str, said_at: float | None = None
    ) -> bool:
        """A stop word of `requester_id`, said at `said_at` (see `Stops.stop_for`)."""
        return await self._stops.stop_for(channel_id, requester_id, said_at)

    async def kill_own(self, channel_id: str, requester_id: str) -> KillOutcome:
        """A member's own /kill (see `Stops.kill_own`)."""
        return await self._stops.kill_own(channel_id, requester_id)

    async def stop_turn(
        self, channel_id: str, turn_id: str, presser_id: str, *, any_turn: bool
    ) -> TurnStop:
        """A press of turn `turn_id`'s Stop button (see `Stops.stop_turn`)."""
        return await self._stops.stop_turn(channel_id, turn_id, presser_id, any_turn=any_turn)

    # -- questions ----------------------------------------------------------------------------

    async def requester_of(self, channel_id: str) -> str | None:
        """Who asked for the turn running in the channel, in this process or another."""
        lease = self._turns.lease(channel_id)
        if lease is not None:
            return lease.turn.trigger.requester_id
        try:
            return await self._backend.requester_of(channel_id)
        except Exception as error:
            if not self._backend.is_transient(error):
                raise
            # /kill must work while the database is away: it stops a turn running here at
            # once, and the rest waits for the database, as /kill does.
            log.warning("who asked in channel %s is unknown while the database is away", channel_id)
            return None

    @property
    def running(self) -> int:
        """The turns this process runs now."""
        return self._turns.running

    async def queued_count(self) -> int:
        """Triggers waiting in every channel's queue, of every process (the queue's depth)."""
        return await self._backend.queued_count()

    async def queued_message_ids(self, channel_id: str) -> set[str]:
        """Messages waiting for their own turn: a history built now must leave them out."""
        return await self._backend.queued_message_ids(channel_id)

    async def wait_for_room(self, channel_id: str, requester_id: str) -> None:
        """Wait until `requester_id` may queue one more message in the channel, room freeing as
        the turn this process runs there hands it on: for a sender that can hold its next
        message back (a console's script) rather than have it refused as full. Returns at once
        if no turn of this process runs there (the admission then says how it stands)."""
        while not await self._backend.has_room(channel_id, requester_id):
            if not await self._turns.wait_handed_on(channel_id):
                return

    async def wait_idle(self, channel_id: str) -> None:
        """Wait until this registry has no turn running or handed on in the channel, and
        whoever asked there and was dropped unanswered has been told."""
        await self._turns.wait_idle(channel_id)
        await self._expiries.told_in(channel_id)
