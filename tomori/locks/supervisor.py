"""The turns one process runs: each in a task it owns, under a lease, released always.

A turn's task serves it and, however it ends, hands the channel on (`LockBackend.hand_off`,
retried while the database is busy or away), once no stop of its own user holds the hand-off
(their queue is cleared first); a turn a stop ended is remembered first, for the channel's next
turn to tell its model (`StoppedAnswers`). A turn this process can no longer vouch for (stale,
or taken over by another process) is abandoned: its stream and task are stopped and the turn
remembered as given up, so its lock row reads as free (`rules.judge`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from tomori.locks.backend import LockBackend
from tomori.locks.lease import Lease, LeaseState
from tomori.locks.settling import settle
from tomori.locks.stopped import Stop, StoppedAnswer, StoppedAnswers
from tomori.locks.upkeep import ProgressWriter, StopRequestReader
from tomori.locks.vocabulary import KillReason, Turn, TurnRunner
from tomori.store.retry import GaveUp, until_not_busy

log = logging.getLogger("tomori.locks")

CLOSING_GRACE_S = 2.0
"""How long a closing registry waits for the database to take each of its last writes."""


class TurnSupervisor:
    def __init__(
        self,
        backend: LockBackend,
        run_turn: TurnRunner,
        closing: Callable[[], bool],
        stopped: StoppedAnswers,
    ) -> None:
        self._backend = backend
        self._stopped = stopped
        self._run_turn = run_turn
        self._closing = closing
        self._leases: dict[str, Lease] = {}
        """Channel -> the lease of the turn this process runs there."""
        self._given_up: dict[str, str] = {}
        """Channel -> the turn this process gave up there, until its row is replaced."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.progress = ProgressWriter(backend, self._abandon_taken_over)
        self.stop_requests = StopRequestReader(backend, self._leases)

    @property
    def running(self) -> int:
        """How many turns this process runs now."""
        return len(self._leases)

    def lease(self, channel_id: str) -> Lease | None:
        """The lease of the turn this process runs in the channel, if any."""
        return self._leases.get(channel_id)

    def given_up_in(self, channel_id: str) -> str | None:
        """The turn this process gave up in the channel, if its row may still stand."""
        return self._given_up.get(channel_id)

    def row_replaced(self, channel_id: str) -> None:
        """The channel's lock row was replaced or deleted: no turn of it is given up here."""
        self._given_up.pop(channel_id, None)

    async def stop_all(self) -> None:
        """Cancel every turn and wait until each has released its channel.

        A turn already releasing is left to finish: a cancel there would cut its hand-off,
        leaving its lock to be recovered as its owner's, which is slower, and cannot tell
        whether it answered if that news had not reached the database yet."""
        for lease in list(self._leases.values()):
            if lease.task is not None and lease.state is not LeaseState.RELEASED:
                lease.task.cancel()
        await settle(lambda: self._tasks)

    async def wait_idle(self, channel_id: str) -> None:
        """Wait until no turn runs or is handed on in the channel."""
        while (lease := self._leases.get(channel_id)) is not None and lease.task is not None:
            await asyncio.wait({lease.task})

    async def wait_handed_on(self, channel_id: str) -> bool:
        """Wait until the turn running in the channel ends and hands it on; False (at once)
        if this process runs none there."""
        lease = self._leases.get(channel_id)
        if lease is None or lease.task is None:
            return False
        await asyncio.wait({lease.task})
        return True

    async def unwound(self, lease: Lease, timeout_s: float) -> Lease | None:
        """Wait at most `timeout_s` for `lease`'s turn to end and hand its channel on; the
        lease of the turn this process runs there then, if any."""
        if lease.task is not None:
            await asyncio.wait({lease.task}, timeout=timeout_s)
        return self._leases.get(lease.turn.channel_id)

    def begin(self, turn: Turn) -> None:
        lease = Lease(turn, self.progress.mark, self.progress.mark_urgent)
        self._leases[turn.channel_id] = lease
        self.stop_requests.wake()
        task = asyncio.create_task(self._serve(lease), name=f"tomori-turn-{turn.channel_id}")
        lease.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, lease: Lease) -> None:
        turn = lease.turn
        ended = False
        try:
            if lease.stop_requested():
                # /kill reached it while the channel was handed to it: it was never started,
                # so it shows nothing (no typing, no Discord reads) and calls no model.
                log.info(
                    "turn %s in channel %s stopped before it started", turn.turn_id, turn.channel_id
                )
            else:
                await self._run_turn(turn, lease)
            ended = True
        except Exception:
            ended = True
            log.exception("turn %s in channel %s failed", turn.turn_id, turn.channel_id)
        finally:
            await self._release(lease, cut=not ended)

    async def _release(self, lease: Lease, *, cut: bool = False) -> None:
        """Free the channel (or hand it to the next trigger); runs once per lease, always.
        A turn `cut` short (by closing) that showed nothing goes back to its queue's head."""
        if lease.state is LeaseState.RELEASED:
            return
        self._remember(lease)
        discard_queue = lease.release()
        replay = cut and not lease.answered and not discard_queue
        self.progress.forget(lease)
        channel_id, turn_id = lease.turn.channel_id, lease.turn.turn_id
        following: Turn | None = None
        try:
            # Closing does not wait on a database that stopped answering: the lock left
            # behind is recovered by the processes still running, or the next start.
            async with asyncio.timeout(CLOSING_GRACE_S if self._closing() else None):
                # A stop of its own user clears their queue first (its retries end on closing).
                await lease.hand_off_allowed()
                following = await until_not_busy(
                    f"handing channel {channel_id} on",
                    lambda: self._backend.hand_off(
                        channel_id,
                        turn_id,
                        discard_queue=discard_queue,
                        closing=self._closing(),
                        replay=replay,
                    ),
                    self._backend.is_transient,
                    keep_trying=lambda: not self._closing(),
                )
        except (GaveUp, TimeoutError):
            log.warning("closing: channel %s is recovered by another process", channel_id)
        except Exception as error:
            if not self._backend.is_database_error(error):
                raise
            log.exception("could not release channel %s; the next message will", channel_id)
            self._given_up[channel_id] = turn_id
        finally:
            if self._leases.get(channel_id) is lease:
                del self._leases[channel_id]
        if following is not None:
            self.begin(following)

    def _remember(self, lease: Lease) -> None:
        """A turn a stop ended is one the channel's next turns tell their model of; one that
        showed its answer unstopped was told of those before it."""
        turn, reason = lease.turn, lease.stop_reason()
        if reason is not None and turn.trigger.message_id is not None:
            stop = Stop.FOLLOWED_UP if reason is KillReason.FOLLOW_UP else Stop.STOPPED
            answer = StoppedAnswer(turn.trigger.message_id, stop, lease.answered, lease.cut_tool)
            self._stopped.stopped(turn.channel_id, answer)
        elif reason is None and lease.answered:
            self._stopped.answered(turn.channel_id)

    def force_release(self, lease: Lease) -> None:
        """End a turn this registry can no longer vouch for; its lock row is taken over next."""
        turn = lease.turn
        log.warning(
            "forcibly releasing the stale lock of channel %s (turn %s, locked %.0fs ago, "
            "last progress %.0fs ago)",
            turn.channel_id,
            turn.turn_id,
            time.monotonic() - lease.began_at,
            lease.idle_s(),
        )
        self._abandon(lease)

    def _abandon(self, lease: Lease) -> None:
        channel_id = lease.turn.channel_id
        if self._leases.get(channel_id) is lease:
            del self._leases[channel_id]
        self._given_up[channel_id] = lease.turn.turn_id
        self.progress.forget(lease)
        lease.abandon()

    def _abandon_taken_over(self, lease: Lease) -> None:
        if lease.state is LeaseState.RELEASED:
            return
        log.warning(
            "channel %s was taken over by another instance; stopping turn %s",
            lease.turn.channel_id,
            lease.turn.turn_id,
        )
        self._abandon(lease)
