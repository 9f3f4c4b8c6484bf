"""Each running turn's progress written into its lock row, many channels in one statement: the
once-a-second write that says a turn is alive (`upkeep.py` gathers it)."""

from __future__ import annotations

from collections.abc import Sequence

from tomori.locks.backend import Progress
from tomori.store.base import Transaction

PROGRESS_ROWS_PER_STATEMENT = 500
"""Progress of this many channels goes in one statement (well under SQLite's parameter limit)."""


async def write_progress(
    tx: Transaction, progress: Sequence[Progress], owner: str, now: float
) -> set[tuple[str, str]]:
    """Each running turn's progress written into its lock row (in statements of at most
    `PROGRESS_ROWS_PER_STATEMENT` rows), and the (channel, turn) pairs `owner` still holds."""
    for start in range(0, len(progress), PROGRESS_ROWS_PER_STATEMENT):
        batch = progress[start : start + PROGRESS_ROWS_PER_STATEMENT]
        values = ", ".join(
            [
                "(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS DOUBLE PRECISION),"
                " CAST(? AS INTEGER), CAST(? AS INTEGER))"
            ]
            * len(batch)
        )
        params: list[object] = []
        for item in batch:
            params += [
                item.channel_id,
                item.turn_id,
                now - item.idle_s,
                item.watchdogs,
                int(item.answered),
            ]
        await tx.execute(
            "UPDATE channel_locks SET last_progress_at = p.column3, watchdogs = p.column4,"
            " answered = p.column5"
            f" FROM (VALUES {values}) AS p"
            " WHERE channel_locks.channel_id = p.column1"
            " AND channel_locks.turn_id = p.column2 AND channel_locks.owner = ?",
            (*params, owner),
        )
    found = await tx.fetchall(
        "SELECT channel_id, turn_id FROM channel_locks WHERE owner = ?",
        (owner,),
    )
    return {(row["channel_id"], row["turn_id"]) for row in found}
