"""Counters an operator reads to see how often each model stalls and each tool fails.

`record` is synchronous and cheap (it runs inside a pass); counts reach the database in batches
from one task the `Metrics` owns, which keeps writing until nothing is pending, so a count
recorded while a batch is being written goes out in the next batch rather than waiting for
the next `record`. `counts()` waits for that task, so it reports every count recorded before
it was called; `close()` does the same. Each count is logged too.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

from tomori.store import Database

log = logging.getLogger(__name__)


class Metrics:
    def __init__(self, database: Database) -> None:
        self._db = database
        self._pending: Counter[tuple[str, str]] = Counter()
        self._flush: asyncio.Task[None] | None = None

    def record(self, name: str, label: str) -> None:
        log.info("metric %s %s", name, label, extra={"metric": name, "label": label})
        self._pending[(name, label)] += 1
        if self._flush is None or self._flush.done():
            self._flush = asyncio.get_running_loop().create_task(self._drain())

    async def close(self) -> None:
        await self._flushed()

    async def counts(self) -> dict[tuple[str, str], int]:
        await self._flushed()
        rows = await self._db.fetchall("SELECT name, label, count FROM metrics")
        return {(row["name"], row["label"]): row["count"] for row in rows}

    async def _flushed(self) -> None:
        if self._flush is not None:
            # wait, not await: a reader cancelled while waiting must not cancel the writes
            await asyncio.wait({self._flush})

    async def _drain(self) -> None:
        while self._pending:
            await self._write()

    async def _write(self) -> None:
        pending, self._pending = self._pending, Counter()
        try:
            async with self._db.transaction() as tx:
                now = await tx.now()
                await tx.executemany(
                    "INSERT INTO metrics (name, label, count, updated_at) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (name, label) DO UPDATE"
                    " SET count = metrics.count + excluded.count, updated_at = excluded.updated_at",
                    [(name, label, count, now) for (name, label), count in pending.items()],
                )
        except Exception as error:
            if not self._db.is_database_error(error):
                raise
            log.warning("could not write %d metric counts", sum(pending.values()), exc_info=True)
