"""Channel registries on a database under test, opened as separate processes open theirs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from tests.support.databases import DatabaseUnderTest, RecordingDatabase
from tomori.locks import ChannelLocks, TurnRunner, lock_backend
from tomori.store import Database

OpenRegistry = Callable[..., Awaitable[ChannelLocks]]


@asynccontextmanager
async def registries(database: DatabaseUnderTest) -> AsyncIterator[OpenRegistry]:
    """Opens registries on `database`, each with a connection (or pool) of its own and the
    database's settings with any given, started; all are closed on the way out.
    `recorder` sees every statement one of them sends."""
    opened: list[ChannelLocks] = []

    async def factory(
        runner: TurnRunner, recorder: list[RecordingDatabase] | None = None, **settings: object
    ) -> ChannelLocks:
        chosen = database.settings(**settings)
        db: Database = await database.open()
        if recorder is not None:
            db = RecordingDatabase(db)
            recorder.append(db)
        locks = ChannelLocks(lock_backend(db, chosen), chosen, runner)
        await locks.start()
        opened.append(locks)
        return locks

    try:
        yield factory
    finally:
        for locks in opened:
            await locks.close()
