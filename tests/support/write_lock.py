"""SQLite's write lock held by another connection: a backup, a migration, another bot under load."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path


@asynccontextmanager
async def write_lock_held(db_path: Path) -> AsyncIterator[None]:
    """Hold the database's write lock from a connection of its own while the body runs.

    The lock is taken off the event loop: the cog may be mid-transaction, and a loop blocked
    here could not let it finish (a busy timeout's stall, then "database is locked").
    """
    blocker = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    try:
        await asyncio.to_thread(blocker.execute, "BEGIN IMMEDIATE")
        yield
        blocker.execute("ROLLBACK")
    finally:
        blocker.close()
