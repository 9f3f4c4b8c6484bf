"""The `tomori` command as a newcomer runs it: --help, no token, a bad setting, a stop signal."""

from __future__ import annotations

import asyncio
import gc
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.command import COMMAND, RUN_COMMAND, environment, run
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import OpenNextcord
from tests.support.paths import REPO
from tests.support.scripts import stalled_after
from tests.support.write_lock import write_lock_held
from tomori.config.models import MODEL_VARIABLES
from tomori.config.settings import VARIABLES, Settings
from tomori_cog.serving import check_database, close_bot, freeze_start_up_heap

pytestmark = pytest.mark.slow  # the command run as a process


def test_help_lists_every_variable() -> None:
    result = run("--help")
    assert result.returncode == 0
    for name in [
        "DISCORD_TOKEN",
        *(n for n, _, _ in MODEL_VARIABLES),
        *(v.name for v in VARIABLES),
    ]:
        assert name in result.stdout, name
    assert "a positive integer up to 86400000 (milliseconds)" in result.stdout  # the bounds
    for variable in VARIABLES:  # and the Settings field each fills, for code that configures
        assert f"(Settings.{variable.field})" in " ".join(result.stdout.split()), variable.name


def test_without_a_token_it_says_how_to_set_one_in_one_line() -> None:
    result = run()
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: DISCORD_TOKEN is not set: create an application")


def test_a_setting_refused_beside_a_misspelled_variable_points_at_the_misspelling() -> None:
    result = run(
        DISCORD_TOKEN="x",
        TOMORI_MODELS="openai:m",
        OPENAI_API_KEY="k",
        TOMORI_TEMPERATURE="warm",
        TOMORI_HISTORY_LIMT="5",
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: TOMORI_TEMPERATURE='warm' is not allowed: it must be a decimal number from 0 to "
        "2 (such as 0.7)",
        "note: TOMORI_HISTORY_LIMT is set, but tomori-cog reads no such variable: did you mean "
        "TOMORI_HISTORY_LIMIT?",
    ]


def test_the_console_says_which_variable_set_is_read_by_nothing_before_the_chat(
    tmp_path: Path,
) -> None:
    ended = subprocess.run(
        [*COMMAND, "--console"],
        input="",
        capture_output=True,
        text=True,
        env=environment(
            TOMORI_MODELS="openai:m",
            OPENAI_API_KEY="k",
            TOMORI_DB_PATH=str(tmp_path / "t.db"),
            TOMORI_HISTORY_LIMT="5",
        ),
        timeout=60,
        check=False,
    )
    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert ended.stderr.splitlines()[0] == (
        "note: TOMORI_HISTORY_LIMT is set, but tomori-cog reads no such variable: did you mean "
        "TOMORI_HISTORY_LIMIT?"
    )


def test_a_bad_setting_stops_start_up_naming_it() -> None:
    result = run(
        DISCORD_TOKEN="x",
        TOMORI_MODELS="openai:m",
        OPENAI_API_KEY="k",
        STREAM_SDK_CALL_TIMEOUT_MS="soon",
    )
    assert result.returncode == 2
    assert "STREAM_SDK_CALL_TIMEOUT_MS='soon' is not allowed" in result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [("TOMORI_HISTORY_LIMIT", "①"), ("STREAM_SDK_CALL_TIMEOUT_MS", "²"), ("TOMORI_CHANNELS", "1²")],
)
def test_a_digit_like_value_stops_start_up_in_one_line_naming_it(variable: str, value: str) -> None:
    result = run(
        DISCORD_TOKEN="x", TOMORI_MODELS="openai:m", OPENAI_API_KEY="k", **{variable: value}
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {variable}={value!r} is not allowed: it must be")
    assert result.stderr.count("\n") == 1  # no traceback


async def launch_bot(launcher: str, target: str, tmp_path: Path) -> asyncio.subprocess.Process:
    """The command started by `launcher` (Python code that patches the world, then runs the
    command with `target`), with a good configuration on a database in `tmp_path`."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        launcher,
        "tomori",
        target,
        env=environment(
            DISCORD_TOKEN="x",
            TOMORI_MODELS="openai:m",
            OPENAI_API_KEY="k",
            TOMORI_DB_PATH=str(tmp_path / "tomori.db"),
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def start_on(database: Path) -> subprocess.CompletedProcess[str]:
    """The command started with a valid configuration on `database`."""
    return run(
        DISCORD_TOKEN="x",
        TOMORI_MODELS="openai:m",
        OPENAI_API_KEY="k",
        TOMORI_DB_PATH=str(database),
    )


def test_a_corrupted_database_stops_start_up_and_is_not_overwritten(tmp_path: Path) -> None:
    database = tmp_path / "tomori.db"
    database.write_bytes(b"not a database" * 64)
    result = start_on(database)
    assert result.returncode == 2
    assert "cannot be used" in result.stderr
    assert database.read_bytes() == b"not a database" * 64


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """Make a file read-only for this process: by its mode, or, for root (whom modes do not
    stop), by the immutable attribute."""
    made: list[Path] = []

    def make(path: Path) -> None:
        if os.geteuid() != 0:
            path.chmod(0o444)
        else:
            ran = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
            if ran.returncode != 0:
                pytest.skip(f"root ignores file modes, and chattr +i failed: {ran.stderr!r}")
        made.append(path)

    yield make
    for path in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(0o644)


def test_a_read_only_database_stops_start_up_and_nothing_is_written(
    tmp_path: Path, read_only: Callable[[Path], None]
) -> None:
    database = tmp_path / "tomori.db"
    asyncio.run(check_database(Settings(db_path=database)))  # good, and current
    content = database.read_bytes()
    read_only(database)
    result = start_on(database)
    assert result.returncode == 2
    assert f"error: the database {str(database)!r} cannot be used (it is read-only)" in (
        result.stderr
    )
    assert "TOMORI_DB_PATH" in result.stderr
    assert database.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tomori.db"]  # no -wal, no -shm


async def test_the_start_up_heap_is_frozen_once_when_the_bot_is_ready(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(settings_for(tmp_path), chain_for(llm_server))
    freeze_start_up_heap(nc.bot)
    frozen_before = gc.get_freeze_count()
    try:
        nc.bot.dispatch("ready")
        async with asyncio.timeout(5):
            while gc.get_freeze_count() == frozen_before:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        provider = nc.chat.config.providers["openai"]
        assert not any(o is provider for o in gc.get_objects())  # out of every collection
        made_after = [object()]
        nc.bot.dispatch("ready")  # a reconnect freezes nothing more
        await asyncio.sleep(0.1)
        assert any(o is made_after for o in gc.get_objects())
    finally:
        gc.unfreeze()


async def test_the_bot_is_closed_even_when_the_cogs_close_overruns_its_time(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(
        settings_for(tmp_path, db_busy_timeout_ms=5_000), chain_for(llm_server)
    )
    service = nc.chat
    llm_server.script(stalled_after("First paragraph.\n\nand then the model stalls"))
    nc.say(f"{nc.mention()} hello")
    async with asyncio.timeout(10):
        while "First paragraph." not in nc.discord.contents():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    async with write_lock_held(tmp_path / "tomori.db"):
        await close_bot(nc.bot)
    assert nc.bot.is_closed()  # the gateway and HTTP session are closed all the same
    await service.close()  # what the command's exit cut short, so no thread outlives the test


LAUNCH_AGAINST = (
    """
import runpy, sys
import nextcord.http
nextcord.http.Route.BASE = sys.argv[2] + "/api/v10"  # Discord's REST API: the test's socket
sys.argv = sys.argv[1:2]
"""
    + RUN_COMMAND
)
"""The command exactly as `tomori` runs it, with Discord's address pointed at the test."""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_stop_signal_ends_the_command_at_once_while_it_is_still_connecting(
    tmp_path: Path, signum: signal.Signals
) -> None:
    connected = asyncio.Event()

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connected.set()
        await reader.read()  # until the bot hangs up
        writer.close()

    # Discord's address, where the TLS handshake of the login request is never answered: the
    # library would wait for its own connect timeout (about 30 s) before giving up.
    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    discord = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    process = await launch_bot(LAUNCH_AGAINST, discord, tmp_path)
    try:
        async with asyncio.timeout(30):
            await connected.wait()
        await asyncio.sleep(0.2)
        process.send_signal(signum)
        async with asyncio.timeout(10):  # the library's own connect timeout is about 30 s
            _, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        server.close()
    assert process.returncode == 0, err.decode()
    assert "Traceback" not in err.decode()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("phase", ["connected", "mid-turn"])
async def test_a_stop_signal_ends_a_connected_bot_at_once_and_releases_its_locks(
    tmp_path: Path, llm_server: LLMServer, phase: str, signum: signal.Signals
) -> None:
    llm_server.script(stalled_after("First paragraph.\n\nand then the model stalls"))
    database = tmp_path / "tomori.db"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.serve_script",
        llm_server.base_url,
        str(database),
        phase,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(30):
            assert await process.stdout.readline() == b"ready\n"
        if phase == "mid-turn":
            assert lock_rows(database) != []
        process.send_signal(signum)
        async with asyncio.timeout(10):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert out == b"closed\n", err.decode()
    assert process.returncode == 0, err.decode()
    assert lock_rows(database) == []
    assert all(connection.closed_at is not None for connection in llm_server.connections)


def lock_rows(database: Path) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(database)) as db:
        return db.execute("SELECT channel_id FROM channel_locks").fetchall()


def test_a_key_with_a_character_no_header_can_carry_stops_start_up_in_one_line() -> None:
    result = run(DISCORD_TOKEN="x", TOMORI_MODELS="openai:m", OPENAI_API_KEY="sk-SECRÉTKEY123")
    assert result.returncode == 2
    assert result.stderr.startswith("error: OPENAI_API_KEY is not allowed: a key must be")
    assert "SECR" not in result.stderr
    assert result.stderr.count("\n") == 1


LAUNCH_WITH_DNS = (
    """
import runpy, socket, sys, time
real_getaddrinfo = socket.getaddrinfo
slow = sys.argv[2] == "slow"

def getaddrinfo(host, *args, **kwargs):
    if isinstance(host, str) and "discord" in host:
        print("resolving", flush=True)
        if slow:
            time.sleep(30)  # a resolver that does not answer: its thread cannot be stopped
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return real_getaddrinfo(host, *args, **kwargs)

socket.getaddrinfo = getaddrinfo
sys.argv = sys.argv[1:2]
"""
    + RUN_COMMAND
)
"""The command as `tomori` runs it, on a machine whose DNS fails Discord's names (slowly)."""


async def start_with_dns(tmp_path: Path, dns: str) -> asyncio.subprocess.Process:
    return await launch_bot(LAUNCH_WITH_DNS, dns, tmp_path)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_stop_signal_ends_the_command_at_once_while_discords_name_does_not_resolve(
    tmp_path: Path, signum: signal.Signals
) -> None:
    process = await start_with_dns(tmp_path, "slow")
    try:
        assert process.stdout is not None
        async with asyncio.timeout(30):
            assert await process.stdout.readline() == b"resolving\n"
        await asyncio.sleep(0.2)
        process.send_signal(signum)
        async with asyncio.timeout(10):  # the lookup's thread would hold the exit for 30 s
            _, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()
    assert "Traceback" not in err.decode()


async def test_an_unreachable_discord_ends_the_command_with_one_line(tmp_path: Path) -> None:
    process = await start_with_dns(tmp_path, "failing")
    try:
        async with asyncio.timeout(30):
            _, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 1
    assert "Traceback" not in err.decode()
    logged = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (INFO|WARNING) ")
    errors = [line for line in err.decode().splitlines() if not logged.match(line)]
    assert errors == [
        "error: could not reach Discord: Cannot connect to host discord.com:443 ssl:default "
        "[Name or service not known]"
    ]
