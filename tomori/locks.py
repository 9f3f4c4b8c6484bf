"""Channel locks: one turn per channel, the rest queued in order, durable in SQLite.

`ChannelLocks` is the single answer to "is this channel busy". A trigger submitted for a free
channel starts a turn (in a task this registry owns); one for a busy channel is queued and served
after the running turn, as a reply to its trigger. Lock rows and queued triggers live in SQLite,
so a restart replays the queue and two registries on one file never both hold a channel; kill
callbacks and watchdog tokens live in memory with the turn they belong to, and so does a stop
request made in the process that runs the turn.

A /kill can reach a process that does not run the channel's turn (two processes on one
gateway session, or a deploy where the old and the new process overlap). It writes the stop
request into the lock row, and the owner, which reads its rows' stop requests every
`STOP_REQUEST_POLL_INTERVAL_S` while it runs turns, stops the turn as a local /kill would.
SQLite cannot notify another process, so this one read is polled; within a process a /kill
cancels at once.

Rules kept from TomoriBot, the bot this cog's behaviour was taken from:
- Stale expiry is lazy (on a new trigger, on /kill): a lock with no watchdog token and no
  progress for `CHANNEL_LOCK_TIMEOUT_MS` is forcibly released, killing its stream and turn and
  discarding its queue.
- Watchdog tokens are per phase, so a phase of a killed turn removing its token can never lift
  the exemption of the turn that took the channel after it.
- Kill callbacks are cleared by compare-and-clear, so an old pass never erases a newer one's.
- While a /kill unwinds, new triggers for the channel are ignored, so the queue it just
  emptied is not refilled.

A database another process keeps busy past `TOMORI_DB_BUSY_TIMEOUT_MS` loses nothing: admission,
release and /kill are retried (`tomori.busy`) until they succeed, admissions of one channel in
arrival order, and a trigger still not admitted after `TOMORI_QUEUE_MAX_AGE_MS` is `FAILED`.
A turn stopped by /kill discards the queue when it releases, rather than hand it on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

import aiosqlite

from tomori.busy import GaveUp, InArrivalOrder, is_busy, until_not_busy
from tomori.config import Settings
from tomori.instances import Instance
from tomori.results import KillReason
from tomori.store import Store

log = logging.getLogger(__name__)

T = TypeVar("T")

KillCallback = Callable[[KillReason], None]

PROGRESS_WRITE_INTERVAL_S = 1.0
"""Progress reaches the database at most this often, however many chunks and channels."""

STOP_REQUEST_POLL_INTERVAL_S = 0.25
"""How often a process running turns reads the stop requests other processes wrote for them."""


@dataclass(frozen=True, slots=True)
class Trigger:
    """A message that asked for a reply, with everything needed to replay it after a restart.

    `payload` is the cog's own JSON-serialisable description of the turn to run.
    """

    channel_id: str
    message_id: str | None = None
    requester_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    received_at: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class Turn:
    """A trigger being served under the channel's lock."""

    turn_id: str
    trigger: Trigger
    from_queue: bool
    locked_at: float

    @property
    def channel_id(self) -> str:
        return self.trigger.channel_id


TurnRunner = Callable[[Turn], Awaitable[None]]


class Admission(StrEnum):
    STARTED = "started"
    QUEUED = "queued"
    IGNORED = "ignored"
    FAILED = "failed"  # the database stayed busy for longer than the queue's age limit


class _LockState(StrEnum):
    FREE = "free"
    HELD = "held"
    STOPPING = "stopping"  # held, and another process has asked for the turn to stop


@dataclass(frozen=True, slots=True)
class KillOutcome:
    stopped: bool
    cleared: int

    @property
    def nothing_to_stop(self) -> bool:
        return not self.stopped and self.cleared == 0


@dataclass(eq=False)
class _Entry:
    """A channel this registry holds: the turn, and what only this process can know of it."""

    turn: Turn
    last_progress_at: float
    watchdogs: set[object] = field(default_factory=set)
    stream_kill: KillCallback | None = None
    stop_requested_by: str | None = None
    task: asyncio.Task[None] | None = None
    released: bool = False


class ChannelLocks:
    """The channel lock registry of one process (or one bot instance) on one database."""

    def __init__(self, store: Store, settings: Settings, run_turn: TurnRunner) -> None:
        self._store = store
        self._settings = settings
        self._run_turn = run_turn
        self._instance = Instance(store, heartbeat_interval_s=settings.lock_timeout_s / 3)
        self._entries: dict[str, _Entry] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._progress = _ProgressWriter(store, self._instance, self._abandon_taken_over)
        self._stop_requests = _StopRequestWatcher(
            store, self._instance, self._entries, self._request_stop
        )
        self._in_order = InArrivalOrder()
        self._closing = False

    @property
    def instance_id(self) -> str:
        return self._instance.instance_id

    # -- life cycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Register this instance and recover channels whose owner is gone, replaying queues."""
        await self._instance.register()
        self._progress.start()
        self._stop_requests.start()
        turns: list[Turn] = []
        async with self._store.transaction() as db:
            cursor = await db.execute(
                "SELECT channel_id, owner FROM channel_locks WHERE owner != ?", (self.instance_id,)
            )
            orphaned = [
                row["channel_id"]
                for row in await cursor.fetchall()
                if not await self._instance.is_alive(db, row["owner"])
            ]
            cursor = await db.execute(
                "SELECT DISTINCT channel_id FROM queued_triggers"
                " WHERE channel_id NOT IN (SELECT channel_id FROM channel_locks)"
            )
            orphaned += [row["channel_id"] for row in await cursor.fetchall()]
            for channel_id in orphaned:
                log.warning("recovering channel %s: its lock owner is gone", channel_id)
                turn = await self._hand_off(db, channel_id)
                if turn is not None:
                    turns.append(turn)
            await self._instance.forget_dead(db)
        for turn in turns:
            self._begin(turn)

    async def close(self) -> None:
        """Stop every running turn, release its lock (queued triggers stay for the next start)."""
        self._closing = True
        # A submit already inside its transaction begins its turn right after it commits;
        # waiting for the store once lets every such turn start, so the loop below sees it.
        # (Retries of a busy database stop now: closing is their signal to give up.)
        await self._store.wait_for_pending()
        for entry in list(self._entries.values()):
            if entry.task is not None:
                entry.task.cancel()
        # A task that just ended may still be in the set (its done callback not run yet);
        # awaiting only ended tasks never yields, so it would never leave: skip them.
        while running := [task for task in self._tasks if not task.done()]:
            await asyncio.gather(*running, return_exceptions=True)
        await self._progress.close()
        await self._stop_requests.close()
        await self._instance.unregister()

    # -- admission ----------------------------------------------------------------------------

    async def submit(self, trigger: Trigger) -> Admission:
        """Start a turn for `trigger`, or queue it behind the channel's running turn.

        A database another process keeps busy is waited out, in arrival order per channel,
        for as long as the trigger could wait in the queue; past that it is `FAILED`.
        """
        async with self._in_order.turn_of(trigger.channel_id):
            deadline = trigger.received_at + self._settings.queue_max_age_s
            try:
                return await until_not_busy(
                    f"admitting message {trigger.message_id} in channel {trigger.channel_id}",
                    lambda: self._admit(trigger),
                    keep_trying=lambda: not self._closing and time.time() < deadline,
                )
            except GaveUp:
                return Admission.IGNORED if self._closing else Admission.FAILED

    async def _admit(self, trigger: Trigger) -> Admission:
        """One attempt at `submit`, in one transaction."""
        channel_id = trigger.channel_id
        if self._closing:
            return Admission.IGNORED
        payload = json.dumps(dict(trigger.payload))
        entry = self._entries.get(channel_id)
        if entry is not None and entry.stop_requested_by is not None:
            log.info("ignoring a message for channel %s: /kill is unwinding", channel_id)
            return Admission.IGNORED
        if entry is not None and self._is_stale(entry):
            self._force_release(entry)
        async with self._store.transaction() as db:
            state = await self._lock_state(db, channel_id)
            if state is _LockState.STOPPING:
                log.info("ignoring a message for channel %s: /kill is unwinding", channel_id)
                return Admission.IGNORED
            if state is _LockState.HELD:
                await self._enqueue(db, trigger, payload)
                return Admission.QUEUED
            queued = await self._pop_next(db, channel_id)
            if queued is None:
                turn = Turn(uuid.uuid4().hex, trigger, from_queue=False, locked_at=time.time())
            else:
                await self._enqueue(db, trigger, payload)
                turn = queued
            await self._write_lock(db, turn)
        self._begin(turn)
        return Admission.STARTED if turn.trigger is trigger else Admission.QUEUED

    async def kill(self, channel_id: str, requester_id: str | None) -> KillOutcome:
        """Clear the channel's queue and stop its running turn, if any (`/kill`).

        The turn stopped is the one holding the channel when the queue is cleared, in the same
        transaction: a turn that ended meanwhile may have handed the channel to a queued
        trigger, and that turn is stopped before it starts (it costs no model call).

        A database another process keeps busy is waited out for up to `TOMORI_QUEUE_MAX_AGE_MS`
        (past it, every trigger queued when /kill came is too old to be served anyway); the
        turn running here stops at once meanwhile, and its release discards the queue.
        """
        entry = self._entries.get(channel_id)
        if entry is not None and self._is_stale(entry):
            self._force_release(entry)
            entry = None
        requester = requester_id or "system"
        stopped_here = False
        if entry is not None:
            self._request_stop(entry, requester)  # at once; the transaction below may wait
            stopped_here = entry.stop_requested_by is not None
        deadline = time.time() + self._settings.queue_max_age_s
        stopped, cleared = await until_not_busy(
            f"/kill in channel {channel_id}",
            lambda: self._clear_and_stop(channel_id, requester),
            keep_trying=lambda: not self._closing and time.time() < deadline,
        )
        stopped = stopped or stopped_here
        log.info(
            "kill in channel %s by %s: stopped=%s cleared=%d",
            channel_id,
            requester_id,
            stopped,
            cleared,
        )
        return KillOutcome(stopped=stopped, cleared=cleared)

    async def _clear_and_stop(self, channel_id: str, requester_id: str) -> tuple[bool, int]:
        """One attempt at `kill`, in one transaction: whether a turn was stopped, how many
        queued triggers were cleared."""
        async with self._store.transaction() as db:
            stopped = await self._stop_holder(db, channel_id, requester_id)
            cursor = await db.execute(
                "DELETE FROM queued_triggers WHERE channel_id = ?", (channel_id,)
            )
            return stopped, cursor.rowcount

    def is_busy(self, channel_id: str) -> bool:
        """Whether this registry is running a turn in the channel."""
        return channel_id in self._entries

    async def requester_of(self, channel_id: str) -> str | None:
        """Who asked for the turn running in the channel, in this process or another."""
        entry = self._entries.get(channel_id)
        if entry is not None:
            return entry.turn.trigger.requester_id
        rows = await self._store.fetchall(
            "SELECT requester_id FROM channel_locks WHERE channel_id = ?", (channel_id,)
        )
        return rows[0]["requester_id"] if rows else None

    async def queued_message_ids(self, channel_id: str) -> set[str]:
        """Messages waiting for their own turn: a history built now must leave them out."""
        rows = await self._store.fetchall(
            "SELECT message_id FROM queued_triggers"
            " WHERE channel_id = ? AND message_id IS NOT NULL",
            (channel_id,),
        )
        return {row["message_id"] for row in rows}

    async def wait_idle(self, channel_id: str) -> None:
        """Wait until this registry has no turn running or handed on in the channel."""
        while (entry := self._entries.get(channel_id)) is not None and entry.task is not None:
            await asyncio.wait({entry.task})

    # -- used by the running turn -------------------------------------------------------------

    def stop_requested(self, channel_id: str) -> bool:
        entry = self._entries.get(channel_id)
        return entry is not None and entry.stop_requested_by is not None

    def touch_channel_lock(self, channel_id: str) -> None:
        """Record progress; the database hears of it at most once a second (runs per chunk)."""
        entry = self._entries.get(channel_id)
        if entry is not None:
            entry.last_progress_at = time.time()
            self._progress.mark(entry)

    async def run_under_watchdog(self, channel_id: str, work: Awaitable[T]) -> T:
        """Run `work` with a watchdog token: while any token is held the lock is never stale.

        Only wrap work whose every path ends in bounded time; the token removes the lock's last
        recovery for that phase.
        """
        entry = self._entries.get(channel_id)
        if entry is None:
            return await work
        token = object()
        entry.watchdogs.add(token)
        self.touch_channel_lock(channel_id)
        try:
            return await work
        finally:
            entry.watchdogs.discard(token)
            if not entry.released:
                entry.last_progress_at = time.time()
                self._progress.mark(entry)

    def set_channel_stream_kill(self, channel_id: str, kill: KillCallback) -> None:
        entry = self._entries.get(channel_id)
        if entry is not None:
            entry.stream_kill = kill

    def clear_channel_stream_kill(self, channel_id: str, kill: KillCallback) -> None:
        """Clear the kill callback only if it is still `kill` (compare-and-clear)."""
        entry = self._entries.get(channel_id)
        if entry is not None and entry.stream_kill is kill:
            entry.stream_kill = None

    # -- internals ----------------------------------------------------------------------------

    def _is_stale(self, entry: _Entry) -> bool:
        return (
            not entry.released  # a released entry is handing the channel on, maybe retrying
            and not entry.watchdogs
            and time.time() - entry.last_progress_at > self._settings.lock_timeout_s
        )

    async def _lock_state(self, db: aiosqlite.Connection, channel_id: str) -> _LockState:
        """Whether a live turn holds the channel; clear what a stale or dead holder left."""
        cursor = await db.execute(
            "SELECT owner, turn_id, last_progress_at, watchdogs, stop_requested_by"
            " FROM channel_locks WHERE channel_id = ?",
            (channel_id,),
        )
        row = await cursor.fetchone()
        if row is None:
            return _LockState.FREE
        stopping = row["stop_requested_by"] is not None
        if row["owner"] == self.instance_id:
            entry = self._entries.get(channel_id)
            if entry is not None and entry.turn.turn_id == row["turn_id"]:
                # asked by another process to stop, maybe before this one has read it
                return _LockState.STOPPING if stopping else _LockState.HELD
            # A lock this registry no longer runs: force-released just now, so its queue goes.
            await self._discard_queue(db, channel_id, "stale lock released")
            return _LockState.FREE
        if not await self._instance.is_alive(db, row["owner"]):
            log.warning(
                "taking over channel %s from instance %s, which is gone", channel_id, row["owner"]
            )
            return _LockState.FREE
        stale = (
            row["watchdogs"] == 0
            and time.time() - float(row["last_progress_at"]) > self._settings.lock_timeout_s
        )
        if not stale:
            return _LockState.STOPPING if stopping else _LockState.HELD
        log.warning(
            "superseding the stale lock of channel %s held by instance %s", channel_id, row["owner"]
        )
        await self._discard_queue(db, channel_id, "stale lock released")
        return _LockState.FREE

    def _request_stop(self, entry: _Entry, requester_id: str) -> None:
        """Stop the turn as /kill does: once, however many processes were asked."""
        if entry.stop_requested_by is not None or entry.released:
            return
        entry.stop_requested_by = requester_id
        if entry.stream_kill is not None:
            entry.stream_kill(KillReason.KILL)

    async def _stop_holder(
        self, db: aiosqlite.Connection, channel_id: str, requester_id: str
    ) -> bool:
        """Stop the turn holding the channel now, here or in another process; False if none.

        A turn of this registry is stopped in memory; the row carries the request too, so the
        channel reads as unwinding to every process. A row that no live turn stands behind
        (its owner gone, or stale) is deleted, as the next message would supersede it anyway:
        /kill leaves the channel free.
        """
        state = await self._lock_state(db, channel_id)
        entry = self._entries.get(channel_id)
        if state is not _LockState.FREE and entry is not None:
            self._request_stop(entry, requester_id)
        if state is _LockState.HELD:
            await db.execute(
                "UPDATE channel_locks SET stop_requested_by = ? WHERE channel_id = ?",
                (requester_id, channel_id),
            )
            log.info("asked the owner of channel %s to stop its turn", channel_id)
        elif state is _LockState.FREE:
            await db.execute("DELETE FROM channel_locks WHERE channel_id = ?", (channel_id,))
        return state is not _LockState.FREE

    async def _enqueue(self, db: aiosqlite.Connection, trigger: Trigger, payload: str) -> None:
        await db.execute(
            "INSERT INTO queued_triggers (channel_id, message_id, requester_id, payload,"
            " received_at) VALUES (?, ?, ?, ?, ?)",
            (
                trigger.channel_id,
                trigger.message_id,
                trigger.requester_id,
                payload,
                trigger.received_at,
            ),
        )

    async def _discard_queue(self, db: aiosqlite.Connection, channel_id: str, why: str) -> None:
        cursor = await db.execute("DELETE FROM queued_triggers WHERE channel_id = ?", (channel_id,))
        if cursor.rowcount:
            log.warning(
                "discarded %d queued trigger(s) of channel %s: %s", cursor.rowcount, channel_id, why
            )

    async def _pop_next(self, db: aiosqlite.Connection, channel_id: str) -> Turn | None:
        """Take the oldest queued trigger still young enough to answer."""
        cutoff = time.time() - self._settings.queue_max_age_s
        while True:
            cursor = await db.execute(
                "SELECT * FROM queued_triggers WHERE channel_id = ? ORDER BY id LIMIT 1",
                (channel_id,),
            )
            row = await cursor.fetchone()
            if row is None:
                return None
            await db.execute("DELETE FROM queued_triggers WHERE id = ?", (row["id"],))
            if float(row["received_at"]) < cutoff:
                log.warning(
                    "dropped queued message %s of channel %s: older than TOMORI_QUEUE_MAX_AGE_MS",
                    row["message_id"],
                    channel_id,
                )
                continue
            trigger = Trigger(
                channel_id=channel_id,
                message_id=row["message_id"],
                requester_id=row["requester_id"],
                payload=json.loads(row["payload"]),
                received_at=float(row["received_at"]),
            )
            return Turn(uuid.uuid4().hex, trigger, from_queue=True, locked_at=time.time())

    async def _write_lock(self, db: aiosqlite.Connection, turn: Turn) -> None:
        await db.execute(
            "INSERT OR REPLACE INTO channel_locks (channel_id, owner, turn_id,"
            " trigger_message_id, requester_id, locked_at, last_progress_at, watchdogs)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
            (
                turn.channel_id,
                self.instance_id,
                turn.turn_id,
                turn.trigger.message_id,
                turn.trigger.requester_id,
                turn.locked_at,
                turn.locked_at,
            ),
        )

    async def _hand_off(self, db: aiosqlite.Connection, channel_id: str) -> Turn | None:
        """Give the channel to its next queued trigger, or free it."""
        turn = None if self._closing else await self._pop_next(db, channel_id)
        if turn is None:
            await db.execute("DELETE FROM channel_locks WHERE channel_id = ?", (channel_id,))
        else:
            await self._write_lock(db, turn)
        return turn

    def _begin(self, turn: Turn) -> None:
        entry = _Entry(turn, last_progress_at=time.time())
        self._entries[turn.channel_id] = entry
        self._stop_requests.wake()
        task = asyncio.create_task(self._serve(entry), name=f"tomori-turn-{turn.channel_id}")
        entry.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, entry: _Entry) -> None:
        try:
            if entry.stop_requested_by is not None:
                # /kill reached it while the channel was handed to it: it was never started,
                # so it shows nothing (no typing, no Discord reads) and calls no model.
                turn = entry.turn
                log.info(
                    "turn %s in channel %s stopped before it started", turn.turn_id, turn.channel_id
                )
            else:
                await self._run_turn(entry.turn)
        except Exception:
            log.exception("turn %s in channel %s failed", entry.turn.turn_id, entry.turn.channel_id)
        finally:
            await self._release(entry)

    async def _release(self, entry: _Entry) -> None:
        """Free the channel (or hand it to the next trigger); runs once per entry, always."""
        if entry.released:
            return
        entry.released = True
        self._progress.forget(entry)
        channel_id = entry.turn.channel_id
        following: Turn | None = None
        try:
            following = await until_not_busy(
                f"handing channel {channel_id} on",
                lambda: self._hand_off_if_held(entry),
                keep_trying=lambda: not self._closing,
            )
        except GaveUp:
            log.warning("closing: channel %s is recovered at the next start", channel_id)
        except sqlite3.Error:
            log.exception("could not release channel %s; the stale rule will", channel_id)
        finally:
            if self._entries.get(channel_id) is entry:
                del self._entries[channel_id]
        if following is not None:
            self._begin(following)

    async def _hand_off_if_held(self, entry: _Entry) -> Turn | None:
        """One attempt at releasing `entry`'s channel, if its turn still holds it."""
        channel_id = entry.turn.channel_id
        async with self._store.transaction() as db:
            cursor = await db.execute(
                "SELECT turn_id FROM channel_locks WHERE channel_id = ? AND owner = ?",
                (channel_id, self.instance_id),
            )
            row = await cursor.fetchone()
            if row is None or row["turn_id"] != entry.turn.turn_id:
                return None
            if entry.stop_requested_by is not None:
                # /kill meant the queue too: its own clearing may still be waiting on the
                # database, and the channel must not go to a message it was asked to drop.
                await self._discard_queue(db, channel_id, "its turn was stopped by /kill")
                await db.execute("DELETE FROM channel_locks WHERE channel_id = ?", (channel_id,))
                return None
            return await self._hand_off(db, channel_id)

    def _force_release(self, entry: _Entry) -> None:
        """End a turn this registry can no longer vouch for; its lock row is taken over next."""
        turn = entry.turn
        log.warning(
            "forcibly releasing the stale lock of channel %s (turn %s, locked %.0fs ago, "
            "last progress %.0fs ago)",
            turn.channel_id,
            turn.turn_id,
            time.time() - turn.locked_at,
            time.time() - entry.last_progress_at,
        )
        self._abandon(entry)

    def _abandon(self, entry: _Entry) -> None:
        entry.released = True
        if self._entries.get(entry.turn.channel_id) is entry:
            del self._entries[entry.turn.channel_id]
        if entry.stream_kill is not None:
            entry.stream_kill(KillReason.STALE)
        if entry.task is not None:
            entry.task.cancel()
        self._progress.forget(entry)

    def _abandon_taken_over(self, entry: _Entry) -> None:
        if entry.released:
            return
        log.warning(
            "channel %s was taken over by another instance; stopping turn %s",
            entry.turn.channel_id,
            entry.turn.turn_id,
        )
        self._abandon(entry)


class _ProgressWriter:
    """Writes the progress of every touched channel in one transaction, at most once a second.

    A write per channel would be a task, a thread hop and a wait on the store per channel and
    second: at hundreds of streaming channels that backlog delays every admission queued
    behind it. One writer keeps the database's cost flat however many channels stream. After
    each batch it reads which rows this instance still holds: a row gone or held by another
    turn means another instance took the channel over, and that turn is stopped.
    """

    def __init__(
        self, store: Store, instance: Instance, taken_over: Callable[[_Entry], None]
    ) -> None:
        self._store = store
        self._instance = instance
        self._taken_over = taken_over
        self._dirty: set[_Entry] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._busy = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="tomori-lock-progress")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._dirty.clear()

    def mark(self, entry: _Entry) -> None:
        if entry not in self._dirty and not entry.released:
            self._dirty.add(entry)
            self._wake.set()

    def forget(self, entry: _Entry) -> None:
        self._dirty.discard(entry)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            written_at = time.monotonic()
            await self._flush()
            await asyncio.sleep(max(0.0, written_at + PROGRESS_WRITE_INTERVAL_S - time.monotonic()))

    async def _flush(self) -> None:
        batch = [entry for entry in self._dirty if not entry.released]
        self._dirty.clear()
        if not batch:
            return
        owner = self._instance.instance_id
        try:
            async with self._store.transaction() as db:
                await db.executemany(
                    "UPDATE channel_locks SET last_progress_at = ?, watchdogs = ?"
                    " WHERE channel_id = ? AND turn_id = ? AND owner = ?",
                    [
                        (
                            entry.last_progress_at,
                            len(entry.watchdogs),
                            entry.turn.channel_id,
                            entry.turn.turn_id,
                            owner,
                        )
                        for entry in batch
                    ],
                )
                cursor = await db.execute(
                    "SELECT channel_id, turn_id FROM channel_locks WHERE owner = ?", (owner,)
                )
                held = {(row["channel_id"], row["turn_id"]) for row in await cursor.fetchall()}
        except Exception as error:  # the writer outlives a bad flush: the next one may succeed
            if not is_busy(error):
                log.warning("could not record progress of %d channel(s)", len(batch), exc_info=True)
            elif not self._busy:  # once per busy spell, not once a second
                log.warning("progress is not recorded while the database is busy")
            self._busy = is_busy(error)
            return
        self._busy = False
        for entry in batch:
            if (entry.turn.channel_id, entry.turn.turn_id) not in held:
                self._taken_over(entry)


class _StopRequestWatcher:
    """Hears the /kills other processes wrote into the lock rows of turns this process runs.

    It reads only while this process runs turns, and its query returns only rows with a stop
    request: one read of the lock table (a row per busy channel) per interval, none when idle.
    """

    def __init__(
        self,
        store: Store,
        instance: Instance,
        entries: Mapping[str, _Entry],
        stop: Callable[[_Entry, str], None],
    ) -> None:
        self._store = store
        self._instance = instance
        self._entries = entries
        self._stop = stop
        self._running_turns = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="tomori-stop-requests")

    def wake(self) -> None:
        """A turn began: start reading, if not already."""
        self._running_turns.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            if not self._entries:
                self._running_turns.clear()
                await self._running_turns.wait()
            await asyncio.sleep(STOP_REQUEST_POLL_INTERVAL_S)
            try:
                rows = await self._store.fetchall(
                    "SELECT channel_id, turn_id, stop_requested_by FROM channel_locks"
                    " WHERE owner = ? AND stop_requested_by IS NOT NULL",
                    (self._instance.instance_id,),
                )
            except sqlite3.Error:  # the watcher outlives a bad read: the next one may succeed
                log.warning("could not read the stop requests of this instance", exc_info=True)
                continue
            for row in rows:
                entry = self._entries.get(row["channel_id"])
                if entry is not None and entry.turn.turn_id == row["turn_id"]:
                    self._stop(entry, row["stop_requested_by"])
