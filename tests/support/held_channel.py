"""A channel's transactions held up by another process, and the moment the cog waits for it.

On SQLite another connection holds the file's write lock, which every transaction waits for at
its BEGIN IMMEDIATE; on PostgreSQL another connection holds the channel's advisory lock, which
the cog's transactions on that channel wait for. `cog_waits` returns once a transaction of the
cog's store is inside that wait, so a test can cancel it there, not merely somewhere near it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from tests.support.databases import DatabaseUnderTest
from tests.support.write_lock import write_lock_held
from tomori.store import Database, SqliteDatabase


class HeldChannel:
    def __init__(self, waiting: asyncio.Event | None, holder: asyncpg.Connection | None) -> None:
        self._waiting = waiting
        self._holder = holder

    async def cog_waits(self, within: float = 10.0) -> None:
        """Return once a transaction of the cog's store waits for the lock held here."""
        async with asyncio.timeout(within):
            if self._waiting is not None:
                await self._waiting.wait()
                return
            assert self._holder is not None
            while not await self._holder.fetchval(  # noqa: ASYNC110 (the server says)
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ):
                await asyncio.sleep(0.005)


@asynccontextmanager
async def channel_held(
    database: DatabaseUnderTest, store: Database, channel_id: str
) -> AsyncIterator[HeldChannel]:
    """Hold `channel_id`'s transactions (on SQLite: every transaction) up while the body runs;
    `store` is the cog's, whose waiting the result reports."""
    if isinstance(store, SqliteDatabase):
        loop = asyncio.get_running_loop()
        waiting = asyncio.Event()
        armed = threading.Event()  # only a BEGIN run while the lock is held here waits

        def traced(sql: str) -> None:  # runs in the connection's worker thread
            if armed.is_set() and sql.startswith("BEGIN"):
                loop.call_soon_threadsafe(waiting.set)

        # Installed before the lock is taken: once it is, the call would queue behind a wait.
        await store.connection.set_trace_callback(traced)
        async with write_lock_held(Path(database.environment["TOMORI_DB_PATH"])):
            armed.set()
            try:
                yield HeldChannel(waiting, None)
            finally:
                armed.clear()
        return
    holder = await asyncpg.connect(database.environment["TOMORI_DB_URL"])
    try:
        await holder.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", channel_id)
        yield HeldChannel(None, holder)
    finally:
        await holder.close()
