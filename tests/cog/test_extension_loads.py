"""A second load of the extension while a Tomori cog runs, as a bot author meets it.

Whichever way the cog was added (`add_tomori`, or either extension name) and whichever name
the second load uses, the second load fails, naming the running cog, and the running cog
serves on: its listener answers, `/kill` and `/tomori` stay registered and answer, and its
database stays open. Each library cleans up after a failed load by module name (cogs,
listeners, application commands, `sys.modules`): none of that may reach the running cog.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.dpy import DpyBot, start_dpy_bot, stop_dpy_bot
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import NextcordBot, start_nextcord_bot, stop_nextcord_bot
from tests.support.scripts import answer
from tomori.providers.base import JsonObject
from tomori.store import SqliteDatabase
from tomori_cog import AlreadyLoaded, ConfigError, TomoriCog, Tool, ToolContext, add_tomori

NAMES = ("tomori_cog", "cogs.tomori")
FIRSTS = (None, *NAMES)
"""How the running cog was added: `add_tomori` (None), or an extension name."""
LOADS = [(first, second) for first in FIRSTS for second in NAMES]


def loaded_how(first: str | None) -> str:
    return "with add_tomori" if first is None else f"as the extension {first!r}"


@pytest.fixture
def environment(tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a loaded extension reads: the test's LLM server, a database in tmp_path."""
    monkeypatch.setenv("TOMORI_MODELS", "openai:test-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{llm_server.base_url}/v1")
    monkeypatch.setenv("TOMORI_DB_PATH", str(tmp_path / "tomori.db"))
    monkeypatch.setenv("STREAM_SDK_CALL_TIMEOUT_MS", "2000")


def database_is_open(cog: Any) -> bool:
    """Whether the cog's SQLite connection is open: its thread lives until it closes."""
    if not cog.chat.started:
        return False
    store = cog.chat.runtime.database
    if not isinstance(store, SqliteDatabase):
        return False
    thread = getattr(store.connection, "_thread", store.connection)
    return isinstance(thread, threading.Thread) and thread.is_alive()


def the_error_names_the_running_cog(raised: BaseException, first: str | None, second: str) -> None:
    if first == second:  # the library itself refuses, before the extension runs
        assert type(raised).__name__ == "ExtensionAlreadyLoaded"
    else:
        assert type(raised).__name__ == "ExtensionFailed"
        assert f"the Tomori cog is already loaded {loaded_how(first)}" in str(raised)


# -- nextcord --------------------------------------------------------------------------------

StartNextcord = Callable[[str | None], Awaitable[NextcordBot]]


@pytest.fixture
async def nextcord_on(
    environment: None, tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[StartNextcord]:
    started: list[NextcordBot] = []

    async def start(extension: str | None) -> NextcordBot:
        nc = await start_nextcord_bot(
            settings_for(tmp_path), chain_for(llm_server), monkeypatch, extension=extension
        )
        started.append(nc)
        return nc

    yield start
    for nc in started:
        await stop_nextcord_bot(nc)


@pytest.mark.parametrize(("first", "second"), LOADS)
async def test_nextcord_a_second_load_fails_and_the_running_cog_serves_on(
    first: str | None, second: str, nextcord_on: StartNextcord, llm_server: LLMServer
) -> None:
    from nextcord.ext import commands

    nc = await nextcord_on(first)
    running = nc.bot.get_cog("Tomori")
    extensions = list(nc.bot.extensions)
    with pytest.raises(commands.ExtensionError) as raised:
        nc.bot.load_extension(second)
    the_error_names_the_running_cog(raised.value, first, second)

    assert nc.bot.get_cog("Tomori") is running
    assert list(nc.bot.extensions) == extensions
    assert {"kill", "tomori"} <= {c.name for c in nc.bot.get_all_application_commands()}
    assert database_is_open(running)
    llm_server.script(answer("Still here."))
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["Still here."]
    reply = await nc.kill()
    assert reply["data"]["embeds"][0]["title"]


# -- discord.py ------------------------------------------------------------------------------

StartDpy = Callable[[str | None], Awaitable[DpyBot]]


@pytest.fixture
async def dpy_on(
    environment: None, tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[StartDpy]:
    started: list[DpyBot] = []

    async def start(extension: str | None) -> DpyBot:
        harness = await start_dpy_bot(
            settings_for(tmp_path), chain_for(llm_server), monkeypatch, extension=extension
        )
        started.append(harness)
        return harness

    yield start
    for harness in started:
        await stop_dpy_bot(harness)


@pytest.mark.parametrize(("first", "second"), LOADS)
async def test_discordpy_a_second_load_fails_and_the_running_cog_serves_on(
    first: str | None, second: str, dpy_on: StartDpy, llm_server: LLMServer
) -> None:
    from discord.ext import commands

    harness = await dpy_on(first)
    running = harness.bot.get_cog("Tomori")
    await harness.chat.ensure_started()
    extensions = list(harness.bot.extensions)
    with pytest.raises(commands.ExtensionError) as raised:
        await harness.bot.load_extension(second)
    the_error_names_the_running_cog(raised.value, first, second)

    assert harness.bot.get_cog("Tomori") is running
    assert list(harness.bot.extensions) == extensions
    assert harness.bot.tree.get_command("kill") is not None
    assert harness.bot.tree.get_command("tomori") is not None
    assert database_is_open(running)
    llm_server.script(answer("Still here."))
    await harness.say(f"{harness.mention()} hi")
    await harness.settled()
    assert [m.content for m in await harness.bot_messages()] == ["Still here."]
    reply = await harness.kill()
    assert reply["data"]["embeds"][0]["title"]


# -- add_tomori while a cog runs ---------------------------------------------------------------


@pytest.mark.parametrize("first", FIRSTS)
async def test_nextcord_add_tomori_while_a_cog_runs_names_the_running_cog(
    first: str | None, nextcord_on: StartNextcord
) -> None:
    nc = await nextcord_on(first)
    running = nc.bot.get_cog("Tomori")
    with pytest.raises(AlreadyLoaded, match=f"already loaded {loaded_how(first)}"):
        add_tomori(nc.bot)
    assert nc.bot.get_cog("Tomori") is running
    assert database_is_open(running)


@pytest.mark.parametrize("first", FIRSTS)
async def test_discordpy_add_tomori_while_a_cog_runs_names_the_running_cog(
    first: str | None, dpy_on: StartDpy
) -> None:
    harness = await dpy_on(first)
    running = harness.bot.get_cog("Tomori")
    await harness.chat.ensure_started()
    with pytest.raises(AlreadyLoaded, match=f"already loaded {loaded_how(first)}"):
        add_tomori(harness.bot)
    assert harness.bot.get_cog("Tomori") is running
    assert database_is_open(running)


# -- a cog added by a bot author's own extension ----------------------------------------------

AUTHORS = "tests.support.authors_extension"


async def test_nextcord_unloading_the_extension_that_called_add_tomori_removes_the_cog(
    nextcord_on: StartNextcord,
) -> None:
    nc = await nextcord_on(AUTHORS)
    cog = nc.bot.get_cog("Tomori")
    nc.bot.unload_extension(AUTHORS)
    assert nc.bot.get_cog("Tomori") is None
    assert "kill" not in {c.name for c in nc.bot.get_all_application_commands()}
    assert cog is not None
    await cog.closing  # type: ignore[attr-defined]
    assert not cog.chat.started  # type: ignore[attr-defined]


async def test_discordpy_unloading_the_extension_that_called_add_tomori_removes_the_cog(
    dpy_on: StartDpy,
) -> None:
    harness = await dpy_on(AUTHORS)
    cog = harness.bot.get_cog("Tomori")
    await harness.chat.ensure_started()
    await harness.bot.unload_extension(AUTHORS)
    assert harness.bot.get_cog("Tomori") is None
    assert harness.bot.tree.get_command("kill") is None
    assert cog is not None
    assert not cog.chat.started  # type: ignore[attr-defined]


# -- a reload keeps the bot's tools, and the documented check holds ---------------------------


async def roll(context: ToolContext, arguments: Mapping[str, Any]) -> JsonObject:
    return {"rolled": 4}


DICE = Tool("roll_die", "Roll a die.", {"type": "object", "properties": {}}, roll)


def add_dice(bot: Any) -> None:
    """The docs' way to add a tool (docs/extending.md, "Your own tools")."""
    cog = bot.get_cog("Tomori")
    if isinstance(cog, TomoriCog):
        cog.register_tool(DICE)


def offered(llm_server: LLMServer) -> list[str]:
    return [tool["function"]["name"] for tool in llm_server.requests[-1].body.get("tools", [])]


@pytest.mark.parametrize("extension", NAMES)
async def test_nextcord_a_reload_keeps_the_tools_and_the_cog_is_still_a_tomoricog(
    extension: str, nextcord_on: StartNextcord, llm_server: LLMServer
) -> None:
    nc = await nextcord_on(extension)
    add_dice(nc.bot)
    nc.bot.reload_extension(extension)
    assert isinstance(nc.bot.get_cog("Tomori"), TomoriCog)
    llm_server.script(answer("Dice at hand."))
    nc.say(f"{nc.mention()} roll")
    await nc.settled()
    assert nc.discord.contents() == ["Dice at hand."]
    assert "roll_die" in offered(llm_server)
    add_dice(nc.bot)  # a bot that registers its tools again after each load may
    llm_server.script(answer("Once."))
    nc.say(f"{nc.mention()} again")
    await nc.settled()
    assert offered(llm_server).count("roll_die") == 1


async def test_a_tool_may_not_take_a_built_in_tools_name(nextcord_on: StartNextcord) -> None:
    nc = await nextcord_on(None)
    cog = nc.bot.get_cog("Tomori")
    assert isinstance(cog, TomoriCog)
    with pytest.raises(ConfigError, match="'current_time' is the name of a built-in tool"):
        cog.register_tool(Tool("current_time", "Not the time.", {}, roll))
    with pytest.raises(ConfigError, match="use letters, digits, _ or -"):
        cog.register_tool(Tool("roll a die", "Spaces.", {}, roll))


@pytest.mark.parametrize("extension", NAMES)
async def test_discordpy_a_reload_keeps_the_tools_and_the_cog_is_still_a_tomoricog(
    extension: str, dpy_on: StartDpy, llm_server: LLMServer
) -> None:
    harness = await dpy_on(extension)
    add_dice(harness.bot)
    await harness.bot.reload_extension(extension)
    assert isinstance(harness.bot.get_cog("Tomori"), TomoriCog)
    llm_server.script(answer("Dice at hand."))
    await harness.say(f"{harness.mention()} roll")
    await harness.settled()
    assert [m.content for m in await harness.bot_messages()] == ["Dice at hand."]
    assert "roll_die" in offered(llm_server)
    add_dice(harness.bot)
    llm_server.script(answer("Once."))
    await harness.say(f"{harness.mention()} again")
    await harness.settled()
    assert offered(llm_server).count("roll_die") == 1
