"""/kill and stop words: who stops which turn, and whose queued messages go with it.

A /kill (a moderator's, or anyone's under the `anyone` policy) stops the channel's running turn
and clears its queue; a member's own /kill and a stop word stop the answer to that member and
clear only what they queued, in the same step that ends the stopped answer: its release
hands the channel on only once the stop's clearing ran (`Lease.hand_off_held`), so never to one
of their messages. Every message a stop cleared is shown so (`tell_cleared`: its mark, its
account), and those whose messages another's /kill cleared are told. Either way a message from
before it, still on its way to the lock store (the database away, or the member's limits being
read), is dropped as the queue it would have joined was (`dropped_for_a_kill`), and shown
cleared when its author's own stop dropped it.
The messages each stop cleared are remembered for the next turn's model (`StoppedAnswers`), as
the stopped turn is by its release.

A press of an answer's Stop button stops the turn its button names and no other (a newer turn
in the channel runs on), whichever process runs it: the lock row holds the running turn's id,
so the press is judged there (`rules.pressed_stop`), and the queue stays.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence

from tomori.config.settings import Settings, seconds
from tomori.locks import rules
from tomori.locks.backend import LockBackend
from tomori.locks.lease import LeaseState
from tomori.locks.stopped import Stop, StoppedAnswer, StoppedAnswers
from tomori.locks.supervisor import TurnSupervisor
from tomori.locks.vocabulary import KillOutcome, KillReason, Trigger, TurnStop
from tomori.store.retry import GaveUp, InArrivalOrder, until_not_busy

log = logging.getLogger("tomori.locks")

MAX_KILLS_KEPT = 10_000
"""Members' own /kills remembered; past it, those older than the queue's age limit go."""


class Stops:
    """The stops of one registry (`ChannelLocks`), over its backend and its turns."""

    def __init__(
        self,
        backend: LockBackend,
        turns: TurnSupervisor,
        in_order: InArrivalOrder,
        until: Callable[[float], Callable[[], bool]],
        lock_timeout_s: float,
        settings: Settings,
        tell_cleared: Callable[[Sequence[Trigger], str | None], None],
        stopped: StoppedAnswers,
    ) -> None:
        """`tell_cleared` hears of the triggers each stop cleared and whose stop it was, at
        once (it tells them in a task of its own)."""
        self._backend = backend
        self._stopped = stopped
        self._tell_cleared = tell_cleared
        self._turns = turns
        self._in_order = in_order
        self._until = until
        self._lock_timeout_s = lock_timeout_s
        self._queue_max_age_s = seconds(settings.queue_max_age_ms)
        self._killed_at: dict[str, float] = {}
        """Channel -> when its last /kill came: a message from before it, still waiting for
        the database, is dropped as the queue it would have joined was."""
        self._killed_by: dict[tuple[str, str | None], float] = {}
        """(Channel, member) -> when the member's own last /kill came there, or their stop
        word that stopped their answer: the same, for their messages alone."""

    def dropped_for_a_kill(self, trigger: Trigger) -> bool:
        """Whether `trigger` arrived before a /kill that clears it (the channel's, or its
        author's own /kill or stop word): it is then dropped, and shown cleared if its
        author's own stop clears it, as their queued messages are."""
        channel_id, requester_id = trigger.channel_id, trigger.requester_id
        if trigger.received_at <= self._killed_by.get((channel_id, requester_id), -math.inf):
            self._cleared(channel_id, [trigger], requester_id)
            return True
        return trigger.received_at <= self._killed_at.get(channel_id, -math.inf)

    async def kill(self, channel_id: str, requester_id: str | None) -> KillOutcome:
        """Clear the channel's queue and stop its running turn, if any (`/kill`).

        The turn stopped is the one holding the channel when the queue is cleared, in the same
        transaction: a turn that ended meanwhile may have handed the channel to a queued
        trigger, and that turn is stopped before it starts (it costs no model call).

        A database that is busy or out of reach is waited out for up to
        `TOMORI_QUEUE_MAX_AGE_MS` (past it, every trigger queued when /kill came is too old to
        be served anyway); the turn running here stops at once meanwhile, and its release
        discards the queue.
        """
        lease = self._turns.lease(channel_id)
        if lease is not None and lease.is_stale(self._lock_timeout_s):
            self._turns.force_release(lease)
            lease = None
        requester = requester_id or "system"
        self._killed_at[channel_id] = time.time()
        stopped_here = False
        if lease is not None:
            lease.request_stop()  # at once; the transaction below may wait
            stopped_here = lease.stop_requested()
        deadline = time.time() + self._queue_max_age_s
        verdict, cleared = await until_not_busy(
            f"/kill in channel {channel_id}",
            lambda: self._backend.stop_and_clear(
                channel_id, requester, self._turns.given_up_in(channel_id)
            ),
            self._backend.is_transient,
            keep_trying=self._until(deadline),
        )
        stopped = not verdict.is_free
        if verdict.is_free:
            self._turns.row_replaced(channel_id)  # its row is deleted
        running = self._turns.lease(channel_id)
        if stopped and running is not None:
            running.request_stop()  # a turn the channel was handed to meanwhile
        stopped = stopped or stopped_here
        log.info(
            "kill in channel %s by %s: stopped=%s cleared=%d",
            channel_id,
            requester_id,
            stopped,
            len(cleared),
        )
        self._cleared(channel_id, cleared, requester_id)
        return KillOutcome(stopped=stopped, cleared=len(cleared))

    async def stop_for(
        self, channel_id: str, requester_id: str, said_at: float | None = None
    ) -> bool:
        """A stop word of `requester_id`, said at `said_at` (now if not given): stop their turn
        running in the channel, here or in another process, and clear what they queued before
        it (the others' queue stays); False if the channel's turn is not theirs (the word is
        then an ordinary message)."""
        said_at = time.time() if said_at is None else said_at
        outcome = await self._stop_theirs(channel_id, requester_id, said_at, own_kill=False)
        return outcome.stopped

    async def kill_own(self, channel_id: str, requester_id: str) -> KillOutcome:
        """A member's own /kill: stop the answer to them, if it runs, and clear what they
        queued, as a stop word does, whoever's turn runs; a message of theirs from before it,
        still waiting for the database or its limits, is dropped too. The others' stay."""
        now = time.time()
        self._own_stop_at(channel_id, requester_id, now)
        return await self._stop_theirs(channel_id, requester_id, now, own_kill=True)

    def _own_stop_at(self, channel_id: str, requester_id: str, at: float) -> None:
        """The member's own stop at `at` clears their messages from before it (a stop word's
        only once it stopped their answer: else it is an ordinary message)."""
        if len(self._killed_by) > MAX_KILLS_KEPT:
            old = time.time() - self._queue_max_age_s
            self._killed_by = {key: t for key, t in self._killed_by.items() if t > old}
        key = (channel_id, requester_id)
        self._killed_by[key] = max(at, self._killed_by.get(key, -math.inf))

    async def _stop_theirs(
        self, channel_id: str, requester_id: str, said_at: float, *, own_kill: bool
    ) -> KillOutcome:
        lease = self._turns.lease(channel_id)
        if lease is None or lease.turn.trigger.requester_id != requester_id:
            return await self._clear_theirs(
                channel_id, requester_id, said_at, own_kill=own_kill, stopped_here=False
            )
        # Its release hands the channel on only once their queue is cleared: never to one of
        # the messages this stop clears.
        with lease.hand_off_held():
            lease.interrupt(KillReason.STOP_WORD)  # at once; the transaction below may wait
            stopped_here = lease.stop_reason() is KillReason.STOP_WORD
            return await self._clear_theirs(
                channel_id, requester_id, said_at, own_kill=own_kill, stopped_here=stopped_here
            )

    async def _clear_theirs(
        self,
        channel_id: str,
        requester_id: str,
        said_at: float,
        *,
        own_kill: bool,
        stopped_here: bool,
    ) -> KillOutcome:
        """The transaction of a member's own stop: their turn (wherever it runs) asked to
        stop, and what they queued before it cleared."""
        what = "/kill by its user" if own_kill else "a stop word"
        deadline = time.time() + self._queue_max_age_s
        try:
            async with self._in_order.turn_of(channel_id):  # after what they sent before it
                if stopped_here:  # theirs still on the way to the lock store go too
                    self._own_stop_at(channel_id, requester_id, said_at)
                stopped, cleared = await until_not_busy(
                    f"{what} in channel {channel_id}",
                    lambda: self._backend.stop_for(
                        channel_id,
                        requester_id,
                        self._turns.given_up_in(channel_id),
                        # their turn here stopped already: the channel may be another's now
                        clear_anyway=own_kill or stopped_here,
                    ),
                    self._backend.is_transient,
                    keep_trying=self._until(deadline),
                )
                if stopped:
                    self._own_stop_at(channel_id, requester_id, said_at)
                    self._stop_handed_to_them(channel_id, requester_id, said_at)
        except GaveUp:  # the database stayed away: what runs here stopped at least
            return KillOutcome(stopped=stopped_here, cleared=0)
        except Exception as error:
            if not self._backend.is_database_error(error):
                raise
            log.exception("could not clear the queue of %s in channel %s", requester_id, channel_id)
            return KillOutcome(stopped=stopped_here, cleared=0)
        self._cleared(channel_id, cleared, requester_id)
        if stopped or cleared:
            log.info(
                "%s in channel %s by %s: stopped=%s, cleared %d of theirs",
                what,
                channel_id,
                requester_id,
                stopped or stopped_here,
                len(cleared),
            )
        return KillOutcome(stopped=stopped or stopped_here, cleared=len(cleared))

    async def stop_turn(
        self, channel_id: str, turn_id: str, presser_id: str, *, any_turn: bool
    ) -> TurnStop:
        """A press of turn `turn_id`'s Stop button by `presser_id` (`any_turn`: they may stop
        any answer, as /kill's policy says): stop that turn, here at once or in the process
        that runs it, as /kill would, keeping the queue; never another turn.

        A database that is busy or out of reach is waited out for up to
        `TOMORI_QUEUE_MAX_AGE_MS`, as /kill's; the turn running here stops at once meanwhile.
        """
        lease = self._turns.lease(channel_id)
        here = None
        if lease is not None and lease.state is not LeaseState.RELEASED:
            held = rules.HeldTurn(lease.turn.turn_id, lease.turn.trigger.requester_id)
            here = rules.pressed_stop(held, turn_id, presser_id, any_turn=any_turn)
            if here is TurnStop.NOT_YOURS:
                return here
            if here is TurnStop.STOPPED:
                assert lease is not None
                # at once; the transaction may wait
                lease.interrupt(rules.button_stop(held, presser_id))
        deadline = time.time() + self._queue_max_age_s
        try:
            outcome = await until_not_busy(
                f"a Stop press in channel {channel_id}",
                lambda: self._backend.stop_turn(
                    channel_id,
                    turn_id,
                    presser_id,
                    self._turns.given_up_in(channel_id),
                    any_turn=any_turn,
                ),
                self._backend.is_transient,
                keep_trying=self._until(deadline),
            )
        except GaveUp:  # the database stayed away: what runs here stopped at least
            return TurnStop.STOPPED if here is TurnStop.STOPPED else TurnStop.FAILED
        except Exception as error:
            if not self._backend.is_database_error(error):
                raise
            log.exception("could not stop turn %s in channel %s", turn_id, channel_id)
            return TurnStop.STOPPED if here is TurnStop.STOPPED else TurnStop.FAILED
        if here is TurnStop.STOPPED:
            outcome = here
        log.info(
            "Stop pressed for turn %s in channel %s by %s: %s",
            turn_id,
            channel_id,
            presser_id,
            outcome,
        )
        return outcome

    def _stop_handed_to_them(self, channel_id: str, requester_id: str, said_at: float) -> None:
        """A message of theirs from before the stop that the channel was handed to here first
        (the stopped turn released before the stop came) stops at once, as its row says."""
        running = self._turns.lease(channel_id)
        if running is None:
            return
        trigger = running.turn.trigger
        if trigger.requester_id == requester_id and trigger.received_at <= said_at:
            running.interrupt(KillReason.STOP_WORD)

    def _cleared(self, channel_id: str, cleared: Sequence[Trigger], by: str | None) -> None:
        """What a stop of `by` cleared: remembered for the next turn's model, and shown."""
        for trigger in cleared:
            if trigger.message_id is not None:
                answer = StoppedAnswer(trigger.message_id, Stop.CLEARED)
                self._stopped.stopped(channel_id, answer)
        self._tell_cleared(cleared, by)
