"""The rows of a channel: its queue and its lock, read and written inside a caller's transaction.

Every time written here is on the database's clock (`now`, from `Transaction.now`); a trigger's
arrival, which this process knows on its own clock, crosses as how long ago it was.
"""

from __future__ import annotations

import json
import logging
import time
import uuid

from tomori.locks import rules
from tomori.locks.backend import Admitted
from tomori.locks.rules import FollowUpRow, HeldTurn, LockState
from tomori.locks.vocabulary import Admission, KillReason, Trigger, Turn
from tomori.store.base import Database, Row, Transaction

log = logging.getLogger("tomori.locks")

LOCKED_TRIGGER = (
    "owner, turn_id, trigger_message_id AS message_id, requester_id, payload, received_at,"
    " follow_up_key, follow_ups"
)
"""A lock row's columns that say whose it is and which trigger its turn answers."""

QUEUED_TRIGGER = "message_id, requester_id, payload, received_at, follow_up_key, follow_ups"
"""A queued trigger's columns, as `trigger_from` reads them."""

INSERT_QUEUED = (
    "INSERT INTO queued_triggers (channel_id, message_id, requester_id, payload,"
    " received_at, follow_up_key, follow_ups) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def arrival_on_database_clock(trigger: Trigger, now: float) -> float:
    """When the trigger arrived, told on the database's clock: `now` less how long ago."""
    return now - max(0.0, time.time() - trigger.received_at)


def _queued_values(trigger: Trigger, now: float) -> tuple[object, ...]:
    return (
        trigger.channel_id,
        trigger.message_id,
        trigger.requester_id,
        json.dumps(dict(trigger.payload)),
        arrival_on_database_clock(trigger, now),
        trigger.follow_up_key,
        trigger.follow_ups,
    )


async def enqueue(tx: Transaction, trigger: Trigger, now: float) -> None:
    await tx.execute(INSERT_QUEUED, _queued_values(trigger, now))


async def enqueue_follow_up(tx: Transaction, trigger: Trigger, now: float) -> None:
    """Queue a follow-up first, in place of its user's follow-ups still waiting (only the
    latest counts: its turn's history shows the earlier ones)."""
    replaced = await tx.execute(
        "DELETE FROM queued_triggers WHERE channel_id = ? AND requester_id = ? AND follow_ups > 0",
        (trigger.channel_id, trigger.requester_id),
    )
    if replaced:
        log.info(
            "message %s of channel %s replaces %d earlier follow-up(s)",
            trigger.message_id,
            trigger.channel_id,
            replaced,
        )
    await _put_first(tx, trigger.channel_id, _queued_values(trigger, now))


async def take_queue(tx: Transaction, channel_id: str, now: float) -> list[Trigger]:
    """Empty the channel's queue; what it held, oldest first."""
    found = await tx.fetchall(
        f"SELECT {QUEUED_TRIGGER} FROM queued_triggers WHERE channel_id = ? ORDER BY id",
        (channel_id,),
    )
    if found:  # the transaction is the channel's: nothing was queued there meanwhile
        await tx.execute("DELETE FROM queued_triggers WHERE channel_id = ?", (channel_id,))
    return [trigger_from(channel_id, row, now) for row in found]


async def discard_queue(
    tx: Transaction, channel_id: str, why: str, now: float, expired: list[Trigger] | None = None
) -> None:
    """Empty the channel's queue; with `expired`, what it held is told there (a stale lock's
    queue waited on a turn that hung: each of its messages is owed a word), else only logged
    (a turn /kill stopped is released: the kill took the queue, and told of it, before)."""
    taken = await take_queue(tx, channel_id, now)
    if expired is not None:
        expired += taken
    if taken:
        log.warning("discarded %d queued trigger(s) of channel %s: %s", len(taken), channel_id, why)


async def queue_first(tx: Transaction, channel_id: str, lock: Row, now: float) -> None:
    """Put the lock's own trigger back at the head of the channel's queue."""
    received_at = now if lock["received_at"] is None else lock["received_at"]
    await _put_first(
        tx,
        channel_id,
        (
            channel_id,
            lock["message_id"],
            lock["requester_id"],
            lock["payload"],
            received_at,
            lock["follow_up_key"],
            lock["follow_ups"],
        ),
    )
    log.info(
        "message %s of channel %s goes back to its queue's head", lock["message_id"], channel_id
    )


async def _put_first(tx: Transaction, channel_id: str, values: tuple[object, ...]) -> None:
    """Queue `values` (as `INSERT_QUEUED` takes them) first: the queue is rewritten behind it,
    keeping its order (ids alone order it, on both engines)."""
    waiting = await tx.fetchall(
        f"SELECT {QUEUED_TRIGGER} FROM queued_triggers WHERE channel_id = ? ORDER BY id",
        (channel_id,),
    )
    await tx.execute("DELETE FROM queued_triggers WHERE channel_id = ?", (channel_id,))
    await tx.executemany(
        INSERT_QUEUED,
        [
            values,
            *(
                (
                    channel_id,
                    row["message_id"],
                    row["requester_id"],
                    row["payload"],
                    row["received_at"],
                    row["follow_up_key"],
                    row["follow_ups"],
                )
                for row in waiting
            ),
        ],
    )


async def pop_next(
    tx: Transaction, channel_id: str, now: float, queue_max_age_s: float, expired: list[Trigger]
) -> Turn | None:
    """Take the oldest queued trigger still young enough to answer; the older ones it passes
    over are dropped, and added to `expired` (their askers are owed a word)."""
    while True:
        row = await tx.fetchone(
            f"SELECT id, {QUEUED_TRIGGER} FROM queued_triggers"
            " WHERE channel_id = ? ORDER BY id LIMIT 1",
            (channel_id,),
        )
        if row is None:
            return None
        await tx.execute("DELETE FROM queued_triggers WHERE id = ?", (row["id"],))
        if rules.too_old(float(row["received_at"]), now, queue_max_age_s):
            log.warning(
                "dropped queued message %s of channel %s: older than TOMORI_QUEUE_MAX_AGE_MS",
                row["message_id"],
                channel_id,
            )
            expired.append(trigger_from(channel_id, row, now))
            continue
        return Turn(uuid.uuid4().hex, trigger_from(channel_id, row, now), from_queue=True)


async def write_lock(tx: Transaction, turn: Turn, owner: str, now: float) -> None:
    trigger = turn.trigger
    await tx.execute(
        "INSERT INTO channel_locks (channel_id, owner, turn_id, trigger_message_id,"
        " requester_id, payload, received_at, locked_at, last_progress_at, watchdogs,"
        " stop_requested_by, interrupted, follow_up_key, follow_ups)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, ?, ?)"
        " ON CONFLICT (channel_id) DO UPDATE SET owner = excluded.owner,"
        " turn_id = excluded.turn_id, trigger_message_id = excluded.trigger_message_id,"
        " requester_id = excluded.requester_id, payload = excluded.payload,"
        " received_at = excluded.received_at, locked_at = excluded.locked_at,"
        " last_progress_at = excluded.last_progress_at, watchdogs = 0,"
        " stop_requested_by = NULL, interrupted = NULL,"
        " follow_up_key = excluded.follow_up_key, follow_ups = excluded.follow_ups",
        (
            turn.channel_id,
            owner,
            turn.turn_id,
            trigger.message_id,
            trigger.requester_id,
            json.dumps(dict(trigger.payload)),
            arrival_on_database_clock(trigger, now),
            now,
            now,
            trigger.follow_up_key,
            trigger.follow_ups,
        ),
    )


def trigger_from(channel_id: str, row: Row, now: float) -> Trigger:
    """A trigger back from the queue or a lock row, its arrival told on this process's clock."""
    waited = now - float(row["received_at"] if row["received_at"] is not None else now)
    return Trigger(
        channel_id=channel_id,
        message_id=row["message_id"],
        requester_id=row["requester_id"],
        payload=json.loads(row["payload"]),
        received_at=time.time() - waited,
        follow_up_key=row["follow_up_key"],
        follow_ups=int(row["follow_ups"]),
    )


# Each message is admitted once across every process on the database.
#
# The same message can reach two processes (the old and the new process of a rolling restart
# both receive it), and on PostgreSQL a commit can land while its reply is lost with the
# connection, so an admission is retried after it succeeded. `admitted_messages` records each
# admitted message until it is older than `TOMORI_QUEUE_MAX_AGE_MS`; a second admission is told
# where the first stands instead of starting another turn.


async def record_admission(tx: Transaction, trigger: Trigger, owner: str, now: float) -> bool:
    """Record that the trigger's message is admitted; False if it was before."""
    if trigger.message_id is None:
        return True
    return bool(
        await tx.execute(
            "INSERT INTO admitted_messages (message_id, admitted_by, admitted_at)"
            " VALUES (?, ?, ?) ON CONFLICT (message_id) DO NOTHING",
            (trigger.message_id, owner, now),
        )
    )


async def admitted_before(tx: Transaction, trigger: Trigger, owner: str) -> Admitted:
    """Where a message admitted before stands now: its turn holds the channel (the turn is
    given when `owner` runs it, to begin if it has not), it waits in the queue, or it is done
    (or runs elsewhere)."""
    lock = await tx.fetchone(
        f"SELECT {LOCKED_TRIGGER} FROM channel_locks WHERE channel_id = ?",
        (trigger.channel_id,),
    )
    if lock is not None and lock["message_id"] == trigger.message_id:
        ours = lock["owner"] == owner
        turn = Turn(lock["turn_id"], trigger, from_queue=False) if ours else None
        return Admitted(LockState.HELD, turn, already=Admission.STARTED)
    queued = await tx.fetchone(
        "SELECT 1 FROM queued_triggers WHERE channel_id = ? AND message_id = ?",
        (trigger.channel_id, trigger.message_id),
    )
    already = Admission.IGNORED if queued is None else Admission.QUEUED
    return Admitted(LockState.HELD, None, already=already)


async def queued_by(
    reader: Transaction | Database, channel_id: str, requester_id: str | None
) -> int:
    """How many messages the member has waiting in the channel's queue (read in a transaction
    that then queues one more, or on its own)."""
    found = await reader.fetchall(
        "SELECT COUNT(*) AS waiting FROM queued_triggers WHERE channel_id = ? AND requester_id = ?",
        (channel_id, requester_id),
    )
    return int(found[0]["waiting"]) if found else 0


async def forget_admissions_before(tx: Transaction, cutoff: float) -> None:
    """Forget admissions older than any duplicate could come (the queue's age limit)."""
    await tx.execute("DELETE FROM admitted_messages WHERE admitted_at < ?", (cutoff,))


async def follow_up_row(tx: Transaction, channel_id: str) -> tuple[str, FollowUpRow] | None:
    """The channel's lock's owner and what decides whether a message follows up its turn."""
    row = await tx.fetchone(
        "SELECT owner, requester_id, follow_up_key, follow_ups, interrupted"
        " FROM channel_locks WHERE channel_id = ?",
        (channel_id,),
    )
    if row is None:
        return None
    lock = FollowUpRow(
        row["requester_id"], row["follow_up_key"], int(row["follow_ups"]), row["interrupted"]
    )
    return row["owner"], lock


async def interrupt_theirs(tx: Transaction, channel_id: str, requester_id: str) -> str | None:
    """Mark the channel's turn stopped by its user (a stop word, their own /kill) if it is
    `requester_id`'s; its owner, or None if the turn is another's."""
    row = await tx.fetchone(
        "UPDATE channel_locks SET interrupted = ? WHERE channel_id = ? AND requester_id = ?"
        " RETURNING owner",
        (str(KillReason.STOP_WORD), channel_id, requester_id),
    )
    return None if row is None else str(row["owner"])


async def discard_theirs(
    tx: Transaction, channel_id: str, requester_id: str, now: float
) -> list[Trigger]:
    """Drop what `requester_id` queued in the channel; what it was, oldest first."""
    found = await tx.fetchall(
        f"SELECT {QUEUED_TRIGGER} FROM queued_triggers"
        " WHERE channel_id = ? AND requester_id = ? ORDER BY id",
        (channel_id, requester_id),
    )
    if found:  # the transaction is the channel's: nothing was queued there meanwhile
        await tx.execute(
            "DELETE FROM queued_triggers WHERE channel_id = ? AND requester_id = ?",
            (channel_id, requester_id),
        )
    return [trigger_from(channel_id, row, now) for row in found]


async def interrupt(tx: Transaction, channel_id: str, reason: KillReason) -> None:
    """Mark the channel's turn interrupted (its owner stops it when it hears)."""
    await tx.execute(
        "UPDATE channel_locks SET interrupted = ? WHERE channel_id = ?", (str(reason), channel_id)
    )


async def held_turn(tx: Transaction, channel_id: str) -> tuple[str, HeldTurn, str | None] | None:
    """The channel's lock's owner, the turn it holds, and why that turn was interrupted (if it
    was); None if nothing holds the channel."""
    row = await tx.fetchone(
        "SELECT owner, turn_id, requester_id, interrupted FROM channel_locks WHERE channel_id = ?",
        (channel_id,),
    )
    if row is None:
        return None
    return str(row["owner"]), HeldTurn(row["turn_id"], row["requester_id"]), row["interrupted"]
