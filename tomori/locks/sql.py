"""The lock backend's intents, written once in SQL that SQLite and PostgreSQL both accept.

Each intent is one transaction of the `Database`, keyed by its channel where it reads, decides
and writes, so no other process decides about that channel meanwhile. Every time it writes or
compares comes from the database's clock (`Transaction.now`); this process's own clock only
says how long ago something happened here (a trigger's arrival, a turn's last progress), which
the backend turns into a time on the database's clock.

What differs by engine lives in the subclasses: how another process hears a stop request, and
that a process stopped and left channels to serve.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace

from tomori.locks import rows, rules
from tomori.locks.backend import Admitted, Progress, StopRequest
from tomori.locks.instances import InstanceRows
from tomori.locks.judge import LockJudge
from tomori.locks.progress_rows import write_progress
from tomori.locks.rules import LockState
from tomori.locks.vocabulary import KillReason, Trigger, Turn, TurnStop
from tomori.store.base import Database, Transaction

log = logging.getLogger("tomori.locks")


class SqlLockBackend:
    """Lock rows, queued triggers and instance rows of one `Database`."""

    def __init__(
        self,
        database: Database,
        lock_timeout_s: float,
        queue_max_age_s: float,
        queue_per_member: int,
    ) -> None:
        self._db = database
        self._queue_per_member = queue_per_member
        self._queue_max_age_s = queue_max_age_s
        self._instances = InstanceRows(database, lock_timeout_s, self._database_up_since)
        self._instance_id = self._instances.instance_id
        self._report: Callable[[Sequence[Trigger]], None] = _nobody_told
        self._judge = LockJudge(self._instances, lock_timeout_s)

    @property
    def instance_id(self) -> str:
        return self._instance_id

    def report_expired(self, report: Callable[[Sequence[Trigger]], None]) -> None:
        self._report = report

    @asynccontextmanager
    async def _channel(self, channel_id: str) -> AsyncIterator[tuple[Transaction, list[Trigger]]]:
        """A transaction keyed by the channel, and the list of the triggers it dropped unanswered
        (too old, or a stale lock's queue): they are reported once it commits, and not at all
        when it does not (a retried attempt drops them again, or not)."""
        expired: list[Trigger] = []
        async with self._db.transaction(channel_id) as tx:
            yield tx, expired
        if expired:
            self._report(expired)

    # -- instances ------------------------------------------------------------------------

    async def register(self) -> None:
        await self._instances.register()

    async def heartbeat(self) -> None:
        await self._instances.heartbeat()
        async with self._db.transaction() as tx:
            await rows.forget_admissions_before(tx, await tx.now() - self._queue_max_age_s)

    async def unregister(self) -> None:
        async with self._db.transaction() as tx:
            await self._instances.unregister(tx)
            await self._announce_departure(tx)

    async def live_processes(self) -> int:
        return await self._instances.live_count()

    async def forget_dead_instances(self) -> None:
        await self._instances.forget_dead()

    # -- recovery ---------------------------------------------------------------------------

    async def orphaned_channels(self) -> list[str]:
        async with self._db.transaction() as tx:
            now, up_since = await tx.now(), await self._instances.up_since(tx)
            found = await tx.fetchall(
                "SELECT channel_id, owner FROM channel_locks WHERE owner != ?",
                (self._instance_id,),
            )
            orphaned = [
                row["channel_id"]
                for row in found
                if not await self._instances.is_alive(tx, row["owner"], now, up_since)
            ]
            return orphaned + await self._left_queues(tx)

    async def _left_queues(self, tx: Transaction) -> list[str]:
        found = await tx.fetchall(
            "SELECT DISTINCT channel_id FROM queued_triggers"
            " WHERE channel_id NOT IN (SELECT channel_id FROM channel_locks)"
        )
        return [row["channel_id"] for row in found]

    async def recover(self, channel_id: str) -> Turn | None:
        async with self._channel(channel_id) as (tx, expired):
            now = await tx.now()
            verdict = await self._judge(tx, channel_id, None, now)
            if verdict not in (LockState.FREE, LockState.OWNER_GONE):
                return None  # another process recovered it first, or it is live after all
            log.warning("recovering channel %s: its lock owner is gone", channel_id)
            if verdict is LockState.OWNER_GONE:
                await self._replay_if_unanswered(tx, channel_id, now)
            return await self._pass_on(tx, channel_id, now, expired, closing=False)

    # -- admission and /kill ----------------------------------------------------------------

    async def admit(self, trigger: Trigger, given_up_turn_id: str | None) -> Admitted:
        channel_id = trigger.channel_id
        async with self._channel(channel_id) as (tx, expired):
            now = await tx.now()
            if not await rows.record_admission(tx, trigger, self._instance_id, now):
                return await rows.admitted_before(tx, trigger, self._instance_id)
            verdict = await self._judge(tx, channel_id, given_up_turn_id, now)
            if verdict is LockState.STOPPING:
                return Admitted(verdict, None)
            if verdict is LockState.HELD:
                if await self._follow_up(tx, trigger, now):
                    return Admitted(verdict, None, follow_up=True)
                if await self._queue_full(tx, channel_id, trigger.requester_id):
                    return Admitted(verdict, None, full=True)
                await rows.enqueue(tx, trigger, now)
                return Admitted(verdict, None)
            if verdict.discards_queue:
                await rows.discard_queue(tx, channel_id, "stale lock released", now, expired)
            if verdict is LockState.OWNER_GONE:
                await self._replay_if_unanswered(tx, channel_id, now)
            turn = await rows.pop_next(tx, channel_id, now, self._queue_max_age_s, expired)
            if turn is None:
                turn = Turn(uuid.uuid4().hex, trigger, from_queue=False)
            else:
                await rows.enqueue(tx, trigger, now)
            await rows.write_lock(tx, turn, self._instance_id, now)
            return Admitted(verdict, turn)

    async def _queue_full(
        self, reader: Transaction | Database, channel_id: str, requester_id: str | None
    ) -> bool:
        """Whether the member has as many messages waiting in the channel as one may."""
        return await rows.queued_by(reader, channel_id, requester_id) >= self._queue_per_member

    async def has_room(self, channel_id: str, requester_id: str | None) -> bool:
        return not await self._queue_full(self._db, channel_id, requester_id)

    async def _follow_up(self, tx: Transaction, trigger: Trigger, now: float) -> bool:
        """Queue `trigger` first as a follow-up and ask the turn to stop, if it is one."""
        if trigger.follow_up_key is None:
            return False
        found = await rows.follow_up_row(tx, trigger.channel_id)
        if found is None:
            return False
        owner, lock = found
        if not rules.takes_follow_up(lock, trigger.requester_id, trigger.follow_up_key):
            return False
        follow_up = replace(trigger, follow_ups=lock.follow_ups + 1)
        await rows.enqueue_follow_up(tx, follow_up, now)
        if lock.interrupted is None:
            await rows.interrupt(tx, trigger.channel_id, KillReason.FOLLOW_UP)
            await self._announce_stop(tx, owner)
        log.info(
            "message %s of channel %s is follow-up %d of its user's turn",
            trigger.message_id,
            trigger.channel_id,
            follow_up.follow_ups,
        )
        return True

    async def stop_for(
        self,
        channel_id: str,
        requester_id: str,
        given_up_turn_id: str | None,
        *,
        clear_anyway: bool = False,
    ) -> tuple[bool, list[Trigger]]:
        async with self._db.transaction(channel_id) as tx:
            now = await tx.now()
            verdict = await self._judge(tx, channel_id, given_up_turn_id, now)
            owner = None  # unless it holds: nothing runs, or /kill is stopping it already
            if verdict is LockState.HELD:
                owner = await rows.interrupt_theirs(tx, channel_id, requester_id)
            if owner is None and not clear_anyway:
                return False, []  # not their turn: the stop word is an ordinary message
            if owner is not None:
                await self._announce_stop(tx, owner)
            return owner is not None, await rows.discard_theirs(tx, channel_id, requester_id, now)

    async def stop_turn(
        self,
        channel_id: str,
        turn_id: str,
        presser_id: str,
        given_up_turn_id: str | None,
        *,
        any_turn: bool,
    ) -> TurnStop:
        async with self._db.transaction(channel_id) as tx:
            now = await tx.now()
            verdict = await self._judge(tx, channel_id, given_up_turn_id, now)
            found = None if verdict.is_free else await rows.held_turn(tx, channel_id)
            held = None if found is None else found[1]
            outcome = rules.pressed_stop(held, turn_id, presser_id, any_turn=any_turn)
            if outcome is not TurnStop.STOPPED or verdict is LockState.STOPPING or found is None:
                return outcome  # (STOPPING: /kill is stopping it already)
            owner, held_turn, interrupted = found
            if interrupted is None or not KillReason(interrupted).is_users_stop:
                # over a follow-up's interruption too, which a turn calling tools ignores
                await rows.interrupt(tx, channel_id, rules.button_stop(held_turn, presser_id))
                await self._announce_stop(tx, owner)
            return outcome

    async def stop_and_clear(
        self, channel_id: str, requester_id: str, given_up_turn_id: str | None
    ) -> tuple[LockState, list[Trigger]]:
        async with self._db.transaction(channel_id) as tx:
            now = await tx.now()
            verdict = await self._judge(tx, channel_id, given_up_turn_id, now)
            if verdict is LockState.HELD:
                row = await tx.fetchone(
                    "UPDATE channel_locks SET stop_requested_by = ? WHERE channel_id = ?"
                    " RETURNING owner",
                    (requester_id, channel_id),
                )
                if row is not None:
                    # Its owner may be this process, which may have handed the channel to a
                    # turn it has not begun yet: it hears the request as another would.
                    await self._announce_stop(tx, row["owner"])
                    log.info("asked the owner of channel %s to stop its turn", channel_id)
            elif verdict.is_free:
                # No live turn stands behind the row (its owner gone, or stale): /kill frees it.
                await tx.execute("DELETE FROM channel_locks WHERE channel_id = ?", (channel_id,))
            return verdict, await rows.take_queue(tx, channel_id, now)

    async def _announce_stop(self, tx: Transaction, owner: str) -> None:
        """Tell `owner` at commit that a stop request waits for it; by default it polls."""

    async def _announce_departure(self, tx: Transaction) -> None:
        """Tell the other processes at commit that this one is gone (its row is), so that they
        serve what it left (queues, a lock it could not hand on) at once; by default they read
        the departure it recorded (`wait_for_departure`)."""

    async def _database_up_since(self, tx: Transaction) -> float:
        """When the database server last started, on its clock; by default it never restarts
        under its processes (SQLite is a file)."""
        return float("-inf")

    # -- hand-off ---------------------------------------------------------------------------

    async def hand_off(
        self,
        channel_id: str,
        turn_id: str,
        *,
        discard_queue: bool,
        closing: bool,
        replay: bool = False,
    ) -> Turn | None:
        async with self._channel(channel_id) as (tx, expired):
            row = await tx.fetchone(
                f"SELECT {rows.LOCKED_TRIGGER} FROM channel_locks WHERE channel_id = ?",
                (channel_id,),
            )
            if row is None or row["owner"] != self._instance_id:
                return None
            now = await tx.now()
            if row["turn_id"] != turn_id:
                # An earlier attempt handed the channel on, but its reply was lost (the
                # connection dropped at commit): the turn it wrote is ours to begin.
                return Turn(
                    row["turn_id"], rows.trigger_from(channel_id, row, now), from_queue=True
                )
            if discard_queue:
                # /kill meant the queue too: its own clearing may still be waiting on the
                # database, and the channel must not go to a message it was asked to drop.
                await rows.discard_queue(tx, channel_id, "its turn was stopped by /kill", now)
                await tx.execute("DELETE FROM channel_locks WHERE channel_id = ?", (channel_id,))
                return None
            if replay:
                await rows.queue_first(tx, channel_id, row, now)
            return await self._pass_on(tx, channel_id, now, expired, closing=closing)

    async def _replay_if_unanswered(self, tx: Transaction, channel_id: str, now: float) -> None:
        """The turn of an owner that is gone goes back to the head of its queue if it showed
        nothing: it crashed, or stopped before it could hand the channel on, and what it was
        asked must not be lost, a message or a command (`/scene`, `/respond`: no message, and
        everything it needs in its payload). One that showed something is not run again (it
        would answer twice), nor a row that holds no trigger (neither a message nor a request:
        written before lock rows kept their trigger)."""
        row = await tx.fetchone(
            f"SELECT {rows.LOCKED_TRIGGER}, answered FROM channel_locks WHERE channel_id = ?",
            (channel_id,),
        )
        if row is None or row["answered"]:
            return
        if row["message_id"] is not None or json.loads(row["payload"]):
            await rows.queue_first(tx, channel_id, row, now)

    async def _pass_on(
        self,
        tx: Transaction,
        channel_id: str,
        now: float,
        expired: list[Trigger],
        *,
        closing: bool,
    ) -> Turn | None:
        """Give the channel to its next queued trigger, or free it (always free it if closing:
        the queue waits for the next start)."""
        if closing:
            turn = None
        else:
            turn = await rows.pop_next(tx, channel_id, now, self._queue_max_age_s, expired)
        if turn is None:
            await tx.execute("DELETE FROM channel_locks WHERE channel_id = ?", (channel_id,))
        else:
            await rows.write_lock(tx, turn, self._instance_id, now)
        return turn

    # -- while turns run --------------------------------------------------------------------

    async def record_progress(self, progress: Sequence[Progress]) -> set[tuple[str, str]]:
        async with self._db.transaction() as tx:
            return await write_progress(tx, progress, self._instance_id, await tx.now())

    async def stop_requests(self) -> list[StopRequest]:
        found = await self._db.fetchall(
            "SELECT channel_id, turn_id, stop_requested_by, interrupted FROM channel_locks"
            " WHERE owner = ? AND (stop_requested_by IS NOT NULL OR interrupted IS NOT NULL)",
            (self._instance_id,),
        )
        return [StopRequest(*row) for row in found]

    async def requester_of(self, channel_id: str) -> str | None:
        found = await self._db.fetchall(
            "SELECT requester_id FROM channel_locks WHERE channel_id = ?", (channel_id,)
        )
        return found[0]["requester_id"] if found else None

    async def queued_count(self) -> int:
        found = await self._db.fetchall("SELECT COUNT(*) AS n FROM queued_triggers")
        return int(found[0]["n"])

    async def queued_message_ids(self, channel_id: str) -> set[str]:
        found = await self._db.fetchall(
            "SELECT message_id FROM queued_triggers"
            " WHERE channel_id = ? AND message_id IS NOT NULL",
            (channel_id,),
        )
        return {row["message_id"] for row in found}

    def is_transient(self, error: BaseException) -> bool:
        return self._db.is_transient(error)

    def is_database_error(self, error: BaseException) -> bool:
        return self._db.is_database_error(error)

    async def wait_for_pending(self) -> None:
        await self._db.wait_for_pending()


def _nobody_told(expired: Sequence[Trigger]) -> None:
    """Until a registry asks to hear of them, dropped triggers are only logged (by `rows`)."""
