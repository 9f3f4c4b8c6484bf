"""The steps of each message's way (`tomori.monitoring.why`), kept in the database for a day,
so whichever process is asked "Why no answer?" can tell, after a restart too.

`note` is synchronous and cheap (it runs inside the intake and the turn); the steps reach the
database in batches from one task the book owns, as `Metrics` does, but `WRITE_AFTER_S` later
and after every message's own work waiting for the connection (`store.first_come`): the steps
of a turn's end must not take the connection from what follows it at once (a stop word's
clearing of the queue, racing the stopped turn's release). Reading an account writes what is
noted first. A batch the database refuses is logged and dropped (the account is an aid,
never worth holding a turn for); so are the oldest of more than `MAX_PENDING` steps waiting
for a database that stays busy. Bounded:
at most `MAX_STEPS` steps a message (a message retried across processes cannot grow one without
end) and `MAX_ROWS` rows in all (the newest kept); the retention sweep deletes the rest after
`KEPT_S` (`tomori.policy.retention`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math

from tomori.monitoring.why import Account, Asked, Fate, Step
from tomori.store import Database
from tomori.store.first_come import arrived
from tomori.store.outage import reported

log = logging.getLogger(__name__)

KEPT_S = 24 * 3600.0
MAX_STEPS = 24
"""Steps kept of one message: a turn with a long chain, retried, stays readable."""
MAX_ROWS = 200_000
"""Steps kept in all: about a day of a busy bot's triggers; past it the oldest go first."""
WRITE_AFTER_S = 1.0
"""How long noted steps wait before they are written (unless an account is read meanwhile)."""
MAX_PENDING = 10_000
"""Steps waiting to be written, at most: a database busy for long does not grow memory."""

_INSERT = (
    "INSERT INTO message_fates (message_id, channel_id, asker_id, fate, subject, outcome,"
    " until_at, count, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class WhyBook:
    """The runtime's `FateSink`: what it notes, written to the database in batches."""

    def __init__(self, database: Database) -> None:
        self._db = database
        self._pending: list[tuple[Asked, Step]] = []
        self._flush: asyncio.Task[None] | None = None
        self._hurry = asyncio.Event()
        self._dropped = 0

    def note(self, asked: Asked, step: Step) -> None:
        log.debug("message %s: %s %s %s", asked.message_id, step.fate, step.subject, step.outcome)
        self._pending.append((asked, step))
        if len(self._pending) > MAX_PENDING:
            del self._pending[0]
            self._dropped += 1
        if self._flush is None or self._flush.done():
            self._flush = asyncio.get_running_loop().create_task(self._drain())

    async def flushed(self) -> None:
        """Return once everything noted so far is written (or its batch was dropped)."""
        if self._flush is not None:
            self._hurry.set()
            await asyncio.wait({self._flush})

    async def close(self) -> None:
        await self.flushed()

    async def account(self, message_id: str) -> Account | None:
        """What is kept of the message, its steps in the order they were noted; None if
        nothing is (never seen, not for the bot, or older than `KEPT_S`)."""
        await self.flushed()
        rows = await self._db.fetchall(
            "SELECT asker_id, fate, subject, outcome, until_at, count FROM message_fates"
            " WHERE message_id = ? ORDER BY id",
            (message_id,),
        )
        if not rows:
            return None
        askers = frozenset(str(row["asker_id"]) for row in rows if row["asker_id"] is not None)
        steps = tuple(
            Step(
                Fate(row["fate"]),
                row["subject"],
                row["outcome"],
                None if row["until_at"] is None else float(row["until_at"]),
                int(row["count"]),
            )
            for row in rows
        )
        return Account(askers, steps)

    async def _drain(self) -> None:
        arrived(math.inf)  # this task's own: after every message's work
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._hurry.wait(), WRITE_AFTER_S)
        self._hurry.clear()
        if self._dropped:
            log.warning("dropped %d steps of messages' ways: the database was busy", self._dropped)
            self._dropped = 0
        while self._pending:
            await self._write()

    async def _write(self) -> None:
        pending, self._pending = self._pending, []
        try:
            async with self._db.transaction() as tx:
                now = await tx.now()
                kept: dict[str, int] = {}
                for asked, step in pending:
                    if asked.message_id not in kept:
                        row = await tx.fetchone(
                            "SELECT COUNT(*) AS n FROM message_fates WHERE message_id = ?",
                            (asked.message_id,),
                        )
                        kept[asked.message_id] = 0 if row is None else int(row["n"])
                    if kept[asked.message_id] >= MAX_STEPS:
                        continue
                    kept[asked.message_id] += 1
                    await tx.execute(
                        _INSERT,
                        (
                            asked.message_id,
                            asked.channel_id,
                            asked.asker_id,
                            str(step.fate),
                            step.subject,
                            step.outcome,
                            step.until,
                            step.count,
                            now,
                        ),
                    )
        except Exception as error:
            if not self._db.is_database_error(error):
                raise
            quiet = reported(error)
            log.log(
                logging.INFO if quiet else logging.WARNING,
                "could not keep %d steps of messages' ways",
                len(pending),
                exc_info=not quiet,
            )


async def sweep(database: Database) -> int:
    """Delete the steps older than `KEPT_S`, and the oldest past `MAX_ROWS`."""
    async with database.transaction() as tx:
        cutoff = await tx.now() - KEPT_S
        deleted = await tx.execute("DELETE FROM message_fates WHERE recorded_at < ?", (cutoff,))
        row = await tx.fetchone(
            "SELECT id FROM message_fates ORDER BY id DESC LIMIT 1 OFFSET ?", (MAX_ROWS,)
        )
        if row is not None:
            deleted += await tx.execute("DELETE FROM message_fates WHERE id <= ?", (row["id"],))
        return deleted
