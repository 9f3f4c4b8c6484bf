"""Each message is admitted once across every process on the database.

The same message can reach two processes (the old and the new process of a rolling restart
both receive it), and on PostgreSQL a commit can land while its reply is lost with the
connection, so an admission is retried after it succeeded. `admitted_messages` records each
admitted message until it is older than `TOMORI_QUEUE_MAX_AGE_MS`; a second admission is told
where the first stands instead of starting another turn.
"""

from __future__ import annotations

from tomori.locks import rows
from tomori.locks.backend import Admitted
from tomori.locks.rules import Verdict
from tomori.locks.turns import Admission, Trigger, Turn
from tomori.store.base import Transaction


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
        f"SELECT {rows.LOCKED_TRIGGER} FROM channel_locks WHERE channel_id = ?",
        (trigger.channel_id,),
    )
    if lock is not None and lock["message_id"] == trigger.message_id:
        ours = lock["owner"] == owner
        turn = Turn(lock["turn_id"], trigger, from_queue=False) if ours else None
        return Admitted(Verdict.HELD, turn, already=Admission.STARTED)
    queued = await tx.fetchone(
        "SELECT 1 FROM queued_triggers WHERE channel_id = ? AND message_id = ?",
        (trigger.channel_id, trigger.message_id),
    )
    already = Admission.IGNORED if queued is None else Admission.QUEUED
    return Admitted(Verdict.HELD, None, already=already)


async def forget_admissions_before(tx: Transaction, cutoff: float) -> None:
    """Forget admissions older than any duplicate could come (the queue's age limit)."""
    await tx.execute("DELETE FROM admitted_messages WHERE admitted_at < ?", (cutoff,))
