"""Where answers keep their takes (migration 0020): `answer_takes`, one row per answer, and
`answer_take_texts`, one per take with its text and tokens.

In the shared database, so a press works from any process and after a restart. Each change
of state is one conditional statement (open to making, making to open), so two presses at
once, or a press beside the message that freezes the takes, never both win. A frozen answer's
texts are cleared: nothing shows them again, and the database keeps no more of the model's
words than the channel does. The retention sweep deletes a frozen answer a day after it froze,
and takes left open (the last answer of a channel gone quiet) a month after their last take or
swipe (`tomori.policy.retention`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tomori.providers.base import Usage
from tomori.store import Database, Row, Transaction
from tomori.turns.takes import Takes, TakeState

MAKING_STALE_S = 15 * 60.0
"""Longer than any turn may wait in its queue and run (see `begin_making`)."""

_COLUMNS = (
    "t.answer_id, t.channel_id, t.guild_id, t.trigger_id, t.asker_id, t.persona, t.messages,"
    " t.shown, t.state, (SELECT COUNT(*) FROM answer_take_texts x"
    " WHERE x.answer_id = t.answer_id) AS count"
)


class TakeStore:
    def __init__(self, database: Database) -> None:
        self._db = database

    def is_database_error(self, error: BaseException) -> bool:
        return self._db.is_database_error(error)

    async def first(
        self,
        takes: Takes,
        parts: Sequence[str],
        usage: Usage,
    ) -> None:
        """Keep an answer's first take, open (`takes.count` and `shown` are 1 and 0)."""
        async with self._db.transaction() as tx:
            now = await tx.now()
            await tx.execute(
                "INSERT INTO answer_takes (answer_id, channel_id, guild_id, trigger_id, asker_id,"
                " persona, messages, shown, state, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
                (
                    takes.answer_id,
                    takes.channel_id,
                    takes.guild_id,
                    takes.trigger_id,
                    takes.asker_id,
                    takes.persona,
                    json.dumps(list(takes.messages)),
                    TakeState.OPEN.value,
                    now,
                ),
            )
            await _add_text(tx, takes.answer_id, 0, parts, usage, now)

    async def of(self, answer_id: str) -> Takes | None:
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM answer_takes t WHERE t.answer_id = ?", (answer_id,)
        )
        return _takes(rows[0]) if rows else None

    async def parts(self, answer_id: str, number: int) -> tuple[str, ...]:
        """The texts of take `number`, message by message (none once frozen)."""
        rows = await self._db.fetchall(
            "SELECT parts FROM answer_take_texts WHERE answer_id = ? AND number = ?",
            (answer_id, number),
        )
        return tuple(json.loads(rows[0]["parts"])) if rows else ()

    async def begin_making(self, answer_id: str, *, below: int | None = None) -> bool:
        """Open to making (a new take is asked for, or a swipe writes one); False if it was
        not open, or (`below`: a new take) it keeps that many takes already, counted in the
        same statement so that a take made meanwhile counts. A take being made for longer
        than `MAKING_STALE_S` counts as open: its turn was lost (dropped for age, or its
        process gone), and the answer is not stuck."""
        counted = (
            ""
            if below is None
            else " AND (SELECT COUNT(*) FROM answer_take_texts x"
            " WHERE x.answer_id = answer_takes.answer_id) < ?"
        )
        async with self._db.transaction() as tx:
            now = await tx.now()
            changed = await tx.execute(
                "UPDATE answer_takes SET state = ?, updated_at = ? WHERE answer_id = ?"
                " AND (state = ? OR (state = ? AND updated_at < ?))" + counted,
                (
                    TakeState.MAKING.value,
                    now,
                    answer_id,
                    TakeState.OPEN.value,
                    TakeState.MAKING.value,
                    now - MAKING_STALE_S,
                    *(() if below is None else (below,)),
                ),
            )
        return changed > 0

    async def made(
        self,
        answer_id: str,
        messages: Sequence[str],
        parts: Sequence[str],
        usage: Usage,
    ) -> Takes | None:
        """A new take was written into `messages`: kept, and shown; making to open (a frozen
        answer stays frozen, its texts cleared). The answer as it stands after."""
        async with self._db.transaction() as tx:
            now = await tx.now()
            rows = await tx.fetchall(
                f"SELECT {_COLUMNS} FROM answer_takes t WHERE t.answer_id = ?", (answer_id,)
            )
            if not rows:
                return None
            found = _takes(rows[0])
            if found.state is not TakeState.FROZEN:
                await _add_text(tx, answer_id, found.count, parts, usage, now)
            await tx.execute(
                "UPDATE answer_takes SET messages = ?, shown = ?, updated_at = ?,"
                " state = CASE WHEN state = ? THEN ? ELSE state END WHERE answer_id = ?",
                (
                    json.dumps(list(messages)),
                    found.count if found.state is not TakeState.FROZEN else found.shown,
                    now,
                    TakeState.MAKING.value,
                    TakeState.OPEN.value,
                    answer_id,
                ),
            )
            rows = await tx.fetchall(
                f"SELECT {_COLUMNS} FROM answer_takes t WHERE t.answer_id = ?", (answer_id,)
            )
        return _takes(rows[0])

    async def not_made(self, answer_id: str) -> bool:
        """Making to open, no take made (its turn never ran, or wrote nothing)."""
        return await self._moved(answer_id, TakeState.MAKING, TakeState.OPEN)

    async def swiped(self, answer_id: str, shown: int, messages: Sequence[str]) -> Takes | None:
        """A swipe (begun as `begin_making`) wrote take `shown` into `messages`: making to
        open, showing it. The answer as it stands after (None: gone)."""
        async with self._db.transaction() as tx:
            await tx.execute(
                "UPDATE answer_takes SET shown = ?, messages = ?, updated_at = ?,"
                " state = CASE WHEN state = ? THEN ? ELSE state END WHERE answer_id = ?",
                (
                    shown,
                    json.dumps(list(messages)),
                    await tx.now(),
                    TakeState.MAKING.value,
                    TakeState.OPEN.value,
                    answer_id,
                ),
            )
            rows = await tx.fetchall(
                f"SELECT {_COLUMNS} FROM answer_takes t WHERE t.answer_id = ?", (answer_id,)
            )
        return _takes(rows[0]) if rows else None

    async def freeze(self, channel_id: str, keep: str | None = None) -> list[Takes]:
        """The channel went on: its answers with takes (but `keep`) are frozen as shown and
        their texts cleared. Those that were not frozen before, whose buttons must go."""
        async with self._db.transaction() as tx:
            rows = await tx.fetchall(
                f"SELECT {_COLUMNS} FROM answer_takes t WHERE t.channel_id = ? AND t.state <> ?",
                (channel_id, TakeState.FROZEN.value),
            )
            frozen = [_takes(row) for row in rows if row["answer_id"] != keep]
            for takes in frozen:
                await tx.execute(
                    "UPDATE answer_takes SET state = ?, updated_at = ? WHERE answer_id = ?",
                    (TakeState.FROZEN.value, await tx.now(), takes.answer_id),
                )
                await tx.execute(
                    "UPDATE answer_take_texts SET parts = '[]' WHERE answer_id = ?",
                    (takes.answer_id,),
                )
        return frozen

    async def open_channels(self) -> set[str]:
        """The channels with an answer whose takes are not frozen."""
        rows = await self._db.fetchall(
            "SELECT DISTINCT channel_id FROM answer_takes WHERE state <> ?",
            (TakeState.FROZEN.value,),
        )
        return {str(row["channel_id"]) for row in rows}

    async def _moved(self, answer_id: str, before: TakeState, after: TakeState) -> bool:
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE answer_takes SET state = ?, updated_at = ?"
                " WHERE answer_id = ? AND state = ?",
                (after.value, await tx.now(), answer_id, before.value),
            )
        return changed > 0


async def _add_text(
    tx: Transaction, answer_id: str, number: int, parts: Sequence[str], usage: Usage, now: float
) -> None:
    await tx.execute(
        "INSERT INTO answer_take_texts (answer_id, number, parts, input_tokens, output_tokens,"
        " made_at) VALUES (?, ?, ?, ?, ?, ?)",
        (answer_id, number, json.dumps(list(parts)), usage.input_tokens, usage.output_tokens, now),
    )


def _takes(row: Row) -> Takes:
    return Takes(
        answer_id=str(row["answer_id"]),
        channel_id=str(row["channel_id"]),
        guild_id=None if row["guild_id"] is None else str(row["guild_id"]),
        trigger_id=str(row["trigger_id"]),
        asker_id=str(row["asker_id"]),
        persona=row["persona"],
        messages=tuple(str(m) for m in json.loads(row["messages"])),
        shown=int(row["shown"]),
        count=int(row["count"]),
        state=TakeState(row["state"]),
    )
