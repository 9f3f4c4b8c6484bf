"""A /kill and a busy database that used to lose (or wrongly answer) a message, through the cog.

Each race is made deterministic by holding the database at the right moment (its write lock
from another connection, or the cog's own store), never by sleeping and hoping.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import CHANNEL_ID, NextcordBot, OpenNextcord
from tests.support.scripts import answer
from tests.support.waiting import until
from tests.support.write_lock import write_lock_held
from tomori.delivery.notices import KILL_STOPPED
from tomori.locks.lease import LeaseState
from tomori.store import SqliteDatabase


@pytest.fixture
def open_bot(tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord) -> Any:
    async def start(**overrides: object) -> NextcordBot:
        return await open_nextcord(settings_for(tmp_path, **overrides), chain_for(llm_server))

    return start


def queued(db_path: Path) -> int:
    with sqlite3.connect(db_path) as reader:
        return int(reader.execute("SELECT COUNT(*) FROM queued_triggers").fetchone()[0])


def logged(caplog: pytest.LogCaptureFixture, text: str) -> Callable[[], bool]:
    return lambda: any(text in record.getMessage() for record in caplog.records)


@asynccontextmanager
async def first_turn_handing_off(nc: NextcordBot, llm_server: LLMServer) -> AsyncIterator[None]:
    """Inside: a first answer has ended and waits for the store (held here) to hand the
    channel to a second, queued message."""
    llm_server.script(answer("First answer.", pieces=4, gap=0.05), answer("Second answer."))
    nc.say(f"{nc.mention()} one")
    await until(lambda: len(llm_server.requests) == 1)
    nc.say(f"{nc.mention()} two")
    await until(lambda: queued(nc.chat._settings.db_path) == 1)
    store, locks = nc.chat.runtime.database, nc.chat.runtime.locks
    assert isinstance(store, SqliteDatabase)
    assert locks is not None
    async with store.transaction():
        lease = locks._turns.lease(str(CHANNEL_ID))
        assert lease is not None
        await until(lambda: lease.state is LeaseState.RELEASED)
        yield


def store_waiters(nc: NextcordBot) -> int:
    """How many wait for the cog's store: the hand-off, then whatever came after it."""
    store = nc.chat.runtime.database
    assert isinstance(store, SqliteDatabase)
    return store._lock.waiting


# -- 14: /kill while a finished turn hands the channel on ---------------------------------------


async def test_a_kill_during_the_hand_off_stops_the_queued_message_before_any_model_call(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    async with first_turn_handing_off(nc, llm_server):
        waiting = store_waiters(nc)  # the hand-off (and maybe the turn's progress)
        kill = asyncio.create_task(nc.kill())  # /kill lands behind the hand-off
        await until(lambda: store_waiters(nc) > waiting)
    reply = await kill
    await nc.settled()
    assert reply["data"]["embeds"][0]["title"] == KILL_STOPPED.title
    assert nc.discord.contents() == ["First answer."]
    assert len(llm_server.requests) == 1  # the stopped turn cost no model call


async def test_a_queued_message_stopped_before_it_starts_shows_no_typing(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    async with first_turn_handing_off(nc, llm_server):
        typed = nc.discord.typing  # the first turn's typing has stopped
        waiting = store_waiters(nc)
        kill = asyncio.create_task(nc.kill())
        await until(lambda: store_waiters(nc) > waiting)
    await kill
    await nc.settled()
    assert nc.discord.contents() == ["First answer."]
    assert nc.discord.typing == typed  # no "is typing..." for a turn that never runs


# -- 15: a database another process keeps busy ---------------------------------------------------


async def test_messages_during_a_long_write_lock_are_all_answered_in_order(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot(db_busy_timeout_ms=100)
    db_path = nc.chat._settings.db_path
    llm_server.script(
        answer("Answer one.", pieces=4, gap=0.1),
        answer("Answer two."),
        answer("Answer three."),
        answer("Answer four."),
    )
    caplog.set_level(logging.INFO)
    nc.say(f"{nc.mention()} one")
    await until(lambda: len(llm_server.requests) == 1)
    nc.say(f"{nc.mention()} two")
    await until(lambda: queued(db_path) == 1)
    async with write_lock_held(db_path):  # a backup, a migration, another bot under load
        nc.say(f"{nc.mention()} three")
        nc.say(f"{nc.mention()} four")
        # the first turn ends under the lock, and cannot hand the channel on yet
        await until(lambda: nc.discord.contents() == ["Answer one."])
        await until(logged(caplog, "handing channel"))
        await until(logged(caplog, "admitting message"))
    await until(lambda: len(nc.discord.contents()) == 4)
    await nc.settled()
    assert nc.discord.contents() == ["Answer one.", "Answer two.", "Answer three.", "Answer four."]
    assert nc.discord.embeds() == []


async def test_a_kill_while_the_database_is_busy_waits_it_out_and_clears_the_queue(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot(db_busy_timeout_ms=100)
    db_path = nc.chat._settings.db_path
    llm_server.script(answer("First answer.", pieces=20, gap=0.1), answer("Second answer."))
    caplog.set_level(logging.INFO)
    nc.say(f"{nc.mention()} one")
    await until(lambda: len(llm_server.requests) == 1)
    nc.say(f"{nc.mention()} two")
    await until(lambda: queued(db_path) == 1)
    async with write_lock_held(db_path):  # held past the busy timeout, not past the reply's
        kill = asyncio.create_task(nc.kill())
        await until(lambda: logged(caplog, "retrying /kill")() or kill.done())
        # the asker's own /kill stops their answer at once; its release waits for the
        # clearing of their queue, which waits for the database
        connection = llm_server.requests[0].connection
        assert connection is not None
        await until(lambda: connection.closed_by_client)
    reply = await kill
    await nc.settled()
    assert reply["data"]["embeds"][0]["title"] == KILL_STOPPED.title
    assert "Second answer." not in nc.discord.contents()
    assert len(llm_server.requests) == 1  # the message /kill cleared was never answered
    assert queued(db_path) == 0


async def test_a_message_that_cannot_be_admitted_within_the_queue_age_gets_the_error_notice(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot(db_busy_timeout_ms=50, queue_max_age_ms=300)
    async with write_lock_held(nc.chat._settings.db_path):
        nc.say(f"{nc.mention()} hello?")
        await until(lambda: nc.discord.embeds() == ["Generation Error"])
    await nc.settled()
    assert nc.discord.contents() == []
    assert llm_server.requests == []
    llm_server.script(answer("Back."))
    nc.say(f"{nc.mention()} now?")
    await nc.settled()
    assert nc.discord.contents() == ["Back."]


async def test_closing_does_not_wait_for_a_busy_database(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot(db_busy_timeout_ms=100)
    llm_server.script(answer("Answer one.", pieces=4, gap=0.1))
    caplog.set_level(logging.INFO)
    nc.say(f"{nc.mention()} one")
    await until(lambda: len(llm_server.requests) == 1)
    async with write_lock_held(nc.chat._settings.db_path):
        nc.say(f"{nc.mention()} two")
        await until(lambda: nc.discord.contents() == ["Answer one."])
        await until(logged(caplog, "handing channel"))
        await until(logged(caplog, "admitting message"))
        async with asyncio.timeout(5):  # retries stop: close does not wait for the lock to go
            await nc.chat.close()
    await nc.settled()
    assert len(llm_server.requests) == 1
