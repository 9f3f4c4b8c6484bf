"""A transaction cancelled while it waits for the database leaves the database usable.

A bot being stopped cancels what it is doing (its background loops, a hand-off past its grace,
its message handlers as the loop ends), and some of it is waiting for the database at that
moment. SQLite's statement then still runs in its connection's thread: a BEGIN that gets the
lock afterwards left the shared connection inside a transaction nobody owned, every later
transaction failed, and the messages they carried were lost (a rolling restart under a flood
lost three). Each race here is made deterministic by holding the database from another
connection and cancelling exactly while the registry waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from tests.support.databases import DatabaseUnderTest, postgres_database, sqlite_database
from tests.support.held_channel import channel_held
from tests.support.postgres import PostgresServer
from tests.support.turns import HeldTurns
from tomori.locks import Admission, ChannelLocks, Trigger, lock_backend
from tomori.store import Database

CHANNEL = "100"
OpenRegistry = Callable[..., Awaitable[tuple[ChannelLocks, Database]]]


def trigger(message_id: str) -> Trigger:
    return Trigger(CHANNEL, message_id, requester_id="7", payload={})


@pytest.fixture
async def open_registry(database: DatabaseUnderTest) -> AsyncIterator[OpenRegistry]:
    """Registries on the test's database, each on a store of its own, as processes are."""
    opened: list[ChannelLocks] = []

    async def factory(turns: HeldTurns, **settings: object) -> tuple[ChannelLocks, Database]:
        chosen = database.settings(**settings)
        store = await database.open()
        locks = ChannelLocks(lock_backend(store, chosen), chosen, turns)
        await locks.start()
        opened.append(locks)
        return locks, store

    yield factory
    for locks in opened:
        await locks.close()


async def until(condition: Callable[[], bool], within: float = 10.0) -> None:
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.005)


async def test_an_admission_cancelled_while_it_waits_for_the_database_leaves_it_usable(
    open_registry: OpenRegistry, database: DatabaseUnderTest, caplog: pytest.LogCaptureFixture
) -> None:
    turns = HeldTurns()
    locks, store = await open_registry(turns)
    async with channel_held(database, store, CHANNEL) as held:
        admitting = asyncio.create_task(locks.submit(trigger("m1")))
        await held.cog_waits()
        admitting.cancel()
        await asyncio.gather(admitting, return_exceptions=True)
    # The cancelled transaction may still get the lock once it is free; the next must not care.
    assert await locks.submit(trigger("m2")) is Admission.STARTED
    assert (await turns.next_started()).trigger.message_id == "m2"
    turns.let_finish("m2")
    await locks.wait_idle(CHANNEL)
    assert await database.rows("SELECT channel_id FROM channel_locks") == []
    assert await database.rows("SELECT message_id FROM admitted_messages") == [("m2",)]
    # The statement finished in its thread after its caller was gone: below aiosqlite 0.16 its
    # result was set on the cancelled future, and asyncio logged an error for every such cancel.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_closing_while_the_heartbeat_waits_for_sqlite_still_hands_the_cut_turn_on(
    tmp_path: object, caplog: pytest.LogCaptureFixture
) -> None:
    """The end of a rolling restart on SQLite: the old process stops while its heartbeat waits
    for the write lock the new one holds. Its turn, cut before it answered, must still go back
    to the queue, and the new process answer it."""
    database = sqlite_database(tmp_path)  # type: ignore[arg-type]
    old_turns, new_turns = HeldTurns(), HeldTurns()
    opened: list[ChannelLocks] = []
    try:
        for turns in (old_turns, new_turns):
            chosen = database.settings(channel_lock_timeout_ms=1500)  # a beat every 0.5 s
            store = await database.open()
            locks = ChannelLocks(lock_backend(store, chosen), chosen, turns)
            await locks.start()
            opened.append(locks)
        (old, new), old_store = opened, database.opened[0]
        assert await old.submit(trigger("m1")) is Admission.STARTED
        await old_turns.next_started()
        async with channel_held(database, old_store, CHANNEL) as held:
            await held.cog_waits()  # the old process's heartbeat waits for the write lock
            closing = asyncio.create_task(old.close())
            await until(lambda: old._closing)  # its loops are cancelled: the heartbeat too
        await closing

        replayed = await new_turns.next_started()
        assert (replayed.trigger.message_id, replayed.from_queue) == ("m1", True)
        new_turns.let_finish("m1")
        await new.wait_idle(CHANNEL)
        # (Older aiosqlite, 0.13 say, also logs from asyncio that the cancelled BEGIN's answer
        # came to a future no longer waiting for it: its noise, not a failure.)
        failures = [r for r in caplog.records if r.name.startswith("tomori")]
        assert not [r.getMessage() for r in failures if r.levelno >= logging.ERROR]
    finally:
        for locks in opened:
            await locks.close()
        await database.close()


async def test_a_cancel_does_not_wait_for_a_postgresql_server_gone_silent(
    pg_url: str, pg_server: PostgresServer
) -> None:
    """A bot stopping while the server is frozen (a host gone silent) cancels what waits for
    it: the cancel returns at once instead of after the statement timeout, and the server,
    once it answers again, has rolled the cut transaction back: the channel is free."""
    database = postgres_database(pg_url)
    turns = HeldTurns()
    store = await database.open()
    settings = database.base
    locks = ChannelLocks(lock_backend(store, settings), settings, turns)
    await locks.start()
    try:
        pg_server.freeze()
        admitting = asyncio.create_task(locks.submit(trigger("m1")))
        try:
            # Its transaction began: a pooled connection is at hand, and BEGIN goes out at once.
            await until(lambda: bool(store._in_flight))  # type: ignore[attr-defined]
            await asyncio.sleep(0.1)  # and it waits for the answer
            admitting.cancel()
            done, _ = await asyncio.wait({admitting}, timeout=1)
            assert done, "the cancel waits for the server"  # for its statement timeout, 15 s
        finally:
            pg_server.thaw()
            await asyncio.gather(admitting, return_exceptions=True)
        assert await locks.submit(trigger("m2")) is Admission.STARTED
        assert (await turns.next_started()).trigger.message_id == "m2"
        turns.let_finish("m2")
        await locks.wait_idle(CHANNEL)
        assert await database.rows("SELECT channel_id FROM channel_locks") == []
    finally:
        await locks.close()
        await database.close()
