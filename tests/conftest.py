from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.attachments import files, open_dpy  # noqa: F401 (fixtures for every test)
from tests.support.bots import LIBRARIES, ChatBot, Library, OpenBot, start_bot
from tests.support.databases import DatabaseUnderTest, postgres_database, sqlite_database
from tests.support.discord_rest import DiscordRestServer, pointed_at
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import (
    NextcordBot,
    OpenNextcord,
    start_nextcord_bot,
    stop_nextcord_bot,
)
from tests.support.passes import Harness
from tests.support.postgres import (
    INSTALL_HINT,
    PostgresServer,
    find_binaries,
    must_run,
    running_postgres,
)
from tests.support.rest_bots import (
    OpenRestBot,
    RestBot,
    declare_world,
    rest_server,
    start_rest_bot,
)
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.store import SqliteDatabase


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the machine has cores, at most four. Most of the suite's
    time is tests waiting on timers, servers and subprocesses, so a third worker on two cores
    cut the whole run from about 9 minutes to 6.5 (`time pytest -n 2` against `-n 3`). Four
    ran it in 7:41, but the rolling restart on a loaded machine lost a message once among
    them (not again in seven runs of it alone or four at once): kept at three until that is
    understood."""
    return min(4, (os.cpu_count() or 1) + 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first, each group in its own order: the workers start on the longest
    (processes, PostgreSQL faults, packaging) and end on short ones, instead of one worker left
    running a slow file alone while the others have finished."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "tomori.db"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def database_under_test(request: pytest.FixtureRequest, tmp_path: Path) -> DatabaseUnderTest:
    """Each engine in turn: a test taking `database` proves its behaviour on both. The fast tier
    (`-m "not slow"`) proves it once, on SQLite; the whole run on PostgreSQL too."""
    if request.param == "postgres":
        return postgres_database(request.getfixturevalue("pg_url"))
    return sqlite_database(tmp_path)


@pytest.fixture
async def database(database_under_test: DatabaseUnderTest) -> AsyncIterator[DatabaseUnderTest]:
    """The test's own database; every connection it opened is closed when the test ends."""
    yield database_under_test
    await database_under_test.close()


@pytest.fixture
async def harness(db_path: Path) -> AsyncIterator[Harness]:
    """Runs `stream_once` passes inside real turns on a real database."""
    database = await SqliteDatabase.open(db_path)
    await database.migrate()
    yield Harness(database)
    await database.close()


@pytest.fixture
async def llm_server() -> AsyncIterator[LLMServer]:
    """A scriptable LLM HTTP server on 127.0.0.1 for the real SDKs to talk to."""
    server = LLMServer()
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def open_nextcord(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenNextcord]:
    """Starts nextcord bots with the cog on fake Discord; each is stopped when the test ends."""
    bots: list[NextcordBot] = []

    async def start(settings: Settings, chain: ModelChain) -> NextcordBot:
        bot = await start_nextcord_bot(settings, chain, monkeypatch)
        bots.append(bot)
        return bot

    yield start
    for bot in bots:
        await stop_nextcord_bot(bot)


@pytest.fixture(params=LIBRARIES)
def library(request: pytest.FixtureRequest) -> Library:
    """Each Discord library in turn: a test taking `open_bot` proves its behaviour on both."""
    chosen: Library = request.param
    return chosen


@pytest.fixture
async def open_bot(library: Library, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenBot]:
    """Starts bots of the test's library with the cog; each is stopped when the test ends."""
    bots: list[ChatBot] = []

    async def start(settings: Settings, chain: ModelChain) -> ChatBot:
        bot = await start_bot(library, settings, chain, monkeypatch)
        bots.append(bot)
        return bot

    yield start
    for bot in bots:
        await bot.stop()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL for the whole run, started when a test first asks for one. Without
    PostgreSQL installed the test skips, or fails under CI (see `must_run`)."""
    binaries = find_binaries(os.environ.get("PATH"))
    if binaries is None:
        if must_run(os.environ):
            pytest.fail(INSTALL_HINT, pytrace=False)
        pytest.skip(INSTALL_HINT)
    with running_postgres(binaries) as server:
        yield server


@pytest.fixture
async def pg_url(pg_server: PostgresServer) -> AsyncIterator[str]:
    """The URL of a fresh, empty database of this test's own on the real PostgreSQL."""
    name = await pg_server.create_database()
    yield pg_server.url(name)
    await pg_server.drop_database(name)


@pytest.fixture
async def discord_rest() -> AsyncIterator[DiscordRestServer]:
    """Discord's REST API with its rate limits on 127.0.0.1 (tests/support/discord_rest.py),
    for the bot and the guild's channels of tests/support/world.py; both libraries'
    `Route.BASE` point at it."""
    async with rest_server() as server:
        declare_world(server)
        with pointed_at(server.api_base):
            yield server


@pytest.fixture
async def open_rest_bot(
    library: Library, discord_rest: DiscordRestServer
) -> AsyncIterator[OpenRestBot]:
    """Starts bots of the test's library with the cog, logged in against `discord_rest`;
    each is stopped when the test ends."""
    bots: list[RestBot] = []

    async def start(settings: Settings, chain: ModelChain) -> RestBot:
        bot = await start_rest_bot(library, discord_rest, settings, chain)
        bots.append(bot)
        return bot

    yield start
    for bot in bots:
        await bot.stop()
