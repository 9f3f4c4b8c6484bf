"""The extension's life cycle as a bot author drives it: load, unload, reload, exit.

Both of the extension's names (`tomori_cog`, and `cogs.tomori` which `bot.py` loads) in both
libraries: an unloaded cog no longer answers, `/kill` is gone, its database connection and its
provider's HTTP connections are closed, a reload answers again, and a script that loaded it
exits by itself whether or not it unloaded it or closed its bot.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import discord.ext.test as dpytest
import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.dpy import DpyBot, start_dpy_bot, stop_dpy_bot
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import NextcordBot, start_nextcord_bot, stop_nextcord_bot
from tests.support.paths import REPO
from tests.support.scripts import answer, stalled_after
from tomori.store import SqliteDatabase

NAMES = ["cogs.tomori", "tomori_cog"]


@pytest.fixture
def environment(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What a loaded extension reads: the test's LLM server, a database in tmp_path."""
    db_path = tmp_path / "tomori.db"
    monkeypatch.setenv("TOMORI_MODELS", "openai:test-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{llm_server.base_url}/v1")
    monkeypatch.setenv("TOMORI_DB_PATH", str(db_path))
    monkeypatch.setenv("STREAM_SDK_CALL_TIMEOUT_MS", "2000")
    monkeypatch.setenv("DISCORD_TYPING_KEEPALIVE_INTERVAL_MS", "50")
    return db_path


def database_threads(cog: Any) -> set[threading.Thread]:
    """The thread of the cog's aiosqlite connection (it lives until the connection closes).

    Found through the connection, as the store finds it: aiosqlite before 0.20 runs each
    connection as a Thread subclass, later ones in a thread of their own, named differently
    from version to version.
    """
    store = cog.chat.runtime.database
    assert isinstance(store, SqliteDatabase)
    thread = getattr(store.connection, "_thread", store.connection)
    assert isinstance(thread, threading.Thread)
    assert thread.is_alive()
    return {thread}


async def all_ended(threads: set[threading.Thread]) -> bool:
    """Whether the threads end within 5 s (a closed connection's thread ends just after)."""
    for thread in threads:
        await asyncio.to_thread(thread.join, 5)
    return not any(thread.is_alive() for thread in threads)


async def all_closed(server: LLMServer) -> bool:
    """Whether every connection the SDK opened to the model server is closed, within 5 s."""
    async with asyncio.timeout(5):
        for connection in server.connections:
            await connection.closed.wait()
    return all(connection.closed_by_client for connection in server.connections)


def lock_rows(db_path: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db_path)) as db:
        return db.execute("SELECT channel_id FROM channel_locks").fetchall()


async def nextcord_events_done() -> None:
    current = asyncio.current_task()
    await asyncio.gather(
        *(
            t
            for t in asyncio.all_tasks()
            if t is not current and t.get_name().startswith("nextcord:")
        ),
        return_exceptions=True,
    )


# -- nextcord --------------------------------------------------------------------------------


@pytest.fixture
async def nextcord_on(
    environment: Path, tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Any]:
    started: list[NextcordBot] = []

    async def start(extension: str) -> NextcordBot:
        nc = await start_nextcord_bot(
            settings_for(tmp_path), chain_for(llm_server), monkeypatch, extension=extension
        )
        started.append(nc)
        return nc

    yield start
    for nc in started:
        await stop_nextcord_bot(nc)


async def unload_nextcord(nc: NextcordBot, extension: str) -> None:
    cog = nc.bot.get_cog("Tomori")
    nc.bot.unload_extension(extension)
    assert nc.bot.get_cog("Tomori") is None
    assert cog is not None
    closing_task = cog.closing  # type: ignore[attr-defined]
    assert closing_task is not None
    await closing_task


@pytest.mark.parametrize("extension", NAMES)
async def test_nextcord_unload_removes_the_cog_and_closes_everything_then_load_serves_again(
    extension: str, nextcord_on: Any, llm_server: LLMServer
) -> None:
    nc = await nextcord_on(extension)
    llm_server.script(answer("Before."))
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["Before."]
    ours = database_threads(nc.bot.get_cog("Tomori"))

    await unload_nextcord(nc, extension)
    assert "kill" not in {c.name for c in nc.bot.get_all_application_commands()}
    assert await all_ended(ours)
    assert await all_closed(llm_server)
    nc.say(f"{nc.mention()} anyone there?")
    await nextcord_events_done()
    await asyncio.sleep(0.2)
    assert nc.discord.contents() == ["Before."]
    assert len(llm_server.requests) == 1

    nc.bot.load_extension(extension)
    llm_server.script(answer("After."))
    nc.say(f"{nc.mention()} back?")
    await nc.settled()
    assert nc.discord.contents() == ["Before.", "After."]


@pytest.mark.parametrize("extension", NAMES)
async def test_nextcord_reload_extension_works_and_the_reloaded_cog_answers(
    extension: str, nextcord_on: Any, llm_server: LLMServer
) -> None:
    nc = await nextcord_on(extension)
    old = nc.bot.get_cog("Tomori")
    nc.bot.reload_extension(extension)
    assert old is not None
    await old.closing
    assert nc.bot.get_cog("Tomori") is not old
    llm_server.script(answer("Reloaded."))
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["Reloaded."]
    reply = await nc.kill()
    assert reply["data"]["embeds"][0]["title"]


@pytest.mark.parametrize("extension", NAMES)
async def test_nextcord_unload_mid_turn_stops_it_and_releases_the_channel(
    extension: str, nextcord_on: Any, llm_server: LLMServer, environment: Path
) -> None:
    nc = await nextcord_on(extension)
    llm_server.script(stalled_after("First paragraph.\n\nand then the model stalls"))
    nc.say(f"{nc.mention()} tell me everything")
    async with asyncio.timeout(5):
        while not nc.discord.contents():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    await unload_nextcord(nc, extension)
    assert lock_rows(environment) == []
    assert await all_closed(llm_server)
    assert nc.discord.contents()[0] == "First paragraph."


# -- discord.py ------------------------------------------------------------------------------


@pytest.fixture
async def dpy_on(
    environment: Path, tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Any]:
    started: list[DpyBot] = []

    async def start(extension: str) -> DpyBot:
        harness = await start_dpy_bot(
            settings_for(tmp_path), chain_for(llm_server), monkeypatch, extension=extension
        )
        started.append(harness)
        return harness

    yield start
    for harness in started:
        await stop_dpy_bot(harness)


async def contents(harness: DpyBot) -> list[str]:
    return [message.content for message in await harness.bot_messages()]


@pytest.mark.parametrize("extension", NAMES)
async def test_discordpy_unload_removes_the_cog_and_closes_everything_then_load_serves_again(
    extension: str, dpy_on: Any, llm_server: LLMServer
) -> None:
    harness = await dpy_on(extension)
    llm_server.script(answer("Before."))
    await harness.say(f"{harness.mention()} hi")
    await harness.settled()
    assert await contents(harness) == ["Before."]
    ours = database_threads(harness.bot.get_cog("Tomori"))

    await harness.bot.unload_extension(extension)
    assert harness.bot.get_cog("Tomori") is None
    assert harness.bot.tree.get_command("kill") is None
    assert await all_ended(ours)
    assert await all_closed(llm_server)
    await harness.say(f"{harness.mention()} anyone there?")
    await dpytest.empty_queue()
    await asyncio.sleep(0.2)
    assert await contents(harness) == ["Before."]
    assert len(llm_server.requests) == 1

    await harness.bot.load_extension(extension)
    llm_server.script(answer("After."))
    await harness.say(f"{harness.mention()} back?")
    await harness.settled()
    assert await contents(harness) == ["Before.", "After."]


@pytest.mark.parametrize("extension", NAMES)
async def test_discordpy_reload_extension_works_and_the_reloaded_cog_answers(
    extension: str, dpy_on: Any, llm_server: LLMServer
) -> None:
    harness = await dpy_on(extension)
    old = harness.bot.get_cog("Tomori")
    await harness.bot.reload_extension(extension)
    assert harness.bot.get_cog("Tomori") not in (None, old)
    llm_server.script(answer("Reloaded."))
    await harness.say(f"{harness.mention()} hi")
    await harness.settled()
    assert await contents(harness) == ["Reloaded."]
    assert harness.bot.tree.get_command("kill") is not None


@pytest.mark.parametrize("extension", NAMES)
async def test_discordpy_unload_mid_turn_stops_it_and_releases_the_channel(
    extension: str, dpy_on: Any, llm_server: LLMServer, environment: Path
) -> None:
    harness = await dpy_on(extension)
    llm_server.script(stalled_after("First paragraph.\n\nand then the model stalls"))
    await harness.say(f"{harness.mention()} tell me everything")
    async with asyncio.timeout(5):
        await harness.sent.wait()
    await harness.bot.unload_extension(extension)
    assert harness.bot.get_cog("Tomori") is None
    assert lock_rows(environment) == []
    assert await all_closed(llm_server)
    assert (await contents(harness))[0] == "First paragraph."


# -- a whole script --------------------------------------------------------------------------


@pytest.mark.slow  # a script run as a process
@pytest.mark.parametrize("ending", ["return", "unload"])
@pytest.mark.parametrize("extension", NAMES)
@pytest.mark.parametrize("library", ["nextcord", "discordpy"])
async def test_a_script_that_used_the_cog_exits_by_itself(
    library: str, extension: str, ending: str, llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Hi from a script."))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.extension_script",
        library,
        extension,
        llm_server.base_url,
        str(tmp_path / "tomori.db"),
        ending,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(20):
            out, err = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        pytest.fail(f"the script did not exit after it returned ({library}, {ending})")
    assert "answered: ['Hi from a script.']" in out.decode(), err.decode()
    assert process.returncode == 0, err.decode()


async def test_nextcord_reload_mid_turn_answers_the_next_message(
    nextcord_on: Any, llm_server: LLMServer
) -> None:
    nc = await nextcord_on("cogs.tomori")
    llm_server.script(stalled_after("First paragraph.\n\nand then the model stalls"))
    nc.say(f"{nc.mention()} tell me everything")
    async with asyncio.timeout(5):
        while not nc.discord.contents():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    nc.bot.reload_extension("cogs.tomori")  # the old cog closes while the new one starts
    llm_server.script(answer("Fresh answer."))
    nc.say(f"{nc.mention()} are you back?")
    await nc.settled()
    assert nc.discord.contents()[-1] == "Fresh answer."


# -- a second load under the other name -------------------------------------------------------

TWICE = [("tomori_cog", "cogs.tomori"), ("cogs.tomori", "tomori_cog")]


@pytest.mark.parametrize(("first", "second"), TWICE)
async def test_nextcord_a_second_load_under_the_other_name_fails_and_the_cog_answers_on(
    first: str, second: str, nextcord_on: Any, llm_server: LLMServer
) -> None:
    from nextcord.ext import commands

    nc = await nextcord_on(first)
    with pytest.raises(commands.ExtensionFailed) as raised:
        nc.bot.load_extension(second)
    assert f"the Tomori cog is already loaded as the extension {first!r}" in str(raised.value)
    assert list(nc.bot.extensions) == [first]
    assert "kill" in {c.name for c in nc.bot.get_all_application_commands()}
    llm_server.script(answer("Still here."))
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["Still here."]


@pytest.mark.parametrize(("first", "second"), TWICE)
async def test_discordpy_a_second_load_under_the_other_name_fails_and_the_cog_answers_on(
    first: str, second: str, dpy_on: Any, llm_server: LLMServer
) -> None:
    from discord.ext import commands

    harness = await dpy_on(first)
    with pytest.raises(commands.ExtensionFailed) as raised:
        await harness.bot.load_extension(second)
    assert f"the Tomori cog is already loaded as the extension {first!r}" in str(raised.value)
    assert list(harness.bot.extensions) == [first]
    assert harness.bot.tree.get_command("kill") is not None
    llm_server.script(answer("Still here."))
    await harness.say(f"{harness.mention()} hi")
    await harness.settled()
    assert await contents(harness) == ["Still here."]
