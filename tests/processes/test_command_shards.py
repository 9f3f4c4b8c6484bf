"""The `tomori` command run as one of several processes that split a bot's shards:
DISCORD_SHARD_COUNT and DISCORD_SHARD_IDS."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import ClientSession
from nextcord.ext import commands

from tests.support.command import run
from tests.support.fake_discord import GOOD, a_fake_discord, the_command_on
from tomori_cog.serving import build_bot, close_bot
from tomori_cog.variables import Shards

pytestmark = pytest.mark.slow  # the command run as processes


def test_help_lists_the_shard_variables() -> None:
    result = run("--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "DISCORD_SHARD_COUNT the application's shards, across every process" in text
    assert "DISCORD_SHARD_IDS the shards this process runs, comma separated" in text


@pytest.mark.parametrize(
    ("env", "sharded", "count", "ids"),
    [
        ({}, False, None, None),
        ({"DISCORD_SHARD_COUNT": "4"}, True, 4, None),  # every shard, in this one process
        ({"DISCORD_SHARD_COUNT": "4", "DISCORD_SHARD_IDS": " 2, 3,"}, True, 4, [2, 3]),
        ({"DISCORD_SHARD_COUNT": "1", "DISCORD_SHARD_IDS": "0"}, True, 1, [0]),
    ],
)
async def test_the_bot_runs_the_shards_the_environment_names(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    sharded: bool,
    count: int | None,
    ids: list[int] | None,
) -> None:
    for name, value in {**GOOD, "TOMORI_DB_PATH": str(tmp_path / "tomori.db")}.items():
        monkeypatch.setenv(name, value)  # what the cog reads as it loads
    bot = await build_bot("nextcord", Shards.from_env(env))
    try:
        if sharded:
            assert isinstance(bot, commands.AutoShardedBot)
        else:
            assert type(bot) is commands.Bot  # today's bot: one connection, no shard count
        assert bot.shard_count == count
        assert getattr(bot, "shard_ids", None) == ids
        assert bot.get_cog("Tomori") is not None
    finally:
        await close_bot(bot)


@pytest.mark.parametrize(
    ("env", "variable", "why"),
    [
        ({"DISCORD_SHARD_COUNT": "0"}, "DISCORD_SHARD_COUNT", "a positive integer"),
        ({"DISCORD_SHARD_COUNT": "two"}, "DISCORD_SHARD_COUNT", "a positive integer"),
        ({"DISCORD_SHARD_COUNT": ""}, "DISCORD_SHARD_COUNT", "a positive integer"),
        ({"DISCORD_SHARD_IDS": "0,1"}, "DISCORD_SHARD_IDS", "DISCORD_SHARD_COUNT must be set"),
        (
            {"DISCORD_SHARD_COUNT": "4", "DISCORD_SHARD_IDS": "0;1"},
            "DISCORD_SHARD_IDS",
            "shard IDs from 0 to 3 separated by commas",
        ),
        (
            {"DISCORD_SHARD_COUNT": "4", "DISCORD_SHARD_IDS": "1,-2"},
            "DISCORD_SHARD_IDS",
            "shard IDs from 0 to 3",
        ),
        (
            {"DISCORD_SHARD_COUNT": "4", "DISCORD_SHARD_IDS": "3,4"},
            "DISCORD_SHARD_IDS",
            "shard 4 is not below DISCORD_SHARD_COUNT=4",
        ),
        (
            {"DISCORD_SHARD_COUNT": "4", "DISCORD_SHARD_IDS": "1,2,1"},
            "DISCORD_SHARD_IDS",
            "shard 1 is listed twice",
        ),
        ({"DISCORD_SHARD_COUNT": "4", "DISCORD_SHARD_IDS": " "}, "DISCORD_SHARD_IDS", "shard IDs"),
        ({"DISCORD_API_URL": "proxy:8080"}, "DISCORD_API_URL", "an http:// or https:// URL"),
        ({"DISCORD_API_URL": "https:///api/v10"}, "DISCORD_API_URL", "with a host"),
    ],
)
def test_a_bad_shard_setting_stops_start_up_naming_it_before_anything_is_opened(
    tmp_path: Path, env: dict[str, str], variable: str, why: str
) -> None:
    database = tmp_path / "tomori.db"
    result = run(**GOOD, TOMORI_DB_PATH=str(database), **env)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {variable}={env[variable]!r} is not allowed: ")
    assert why in result.stderr
    assert result.stderr.count("\n") == 1  # no traceback
    assert not database.exists()  # stopped before the database, and before Discord


async def started_on_a_fake_gateway(
    library: str = "nextcord",
    while_up: Callable[[], Awaitable[None]] | None = None,
    **env: str,
) -> tuple[object, str]:
    """The command started with `env` on `a_fake_discord`: the shard its IDENTIFY names, and
    what it wrote to standard error until SIGTERM ended it (with exit code 0); `while_up` is
    awaited once it has identified, before the SIGTERM."""
    async with a_fake_discord() as discord:
        process = await the_command_on(discord.port, library, **env)
        try:
            async with asyncio.timeout(30):
                shard = await discord.identified.get()
            if while_up is not None:
                await while_up()
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(10):
                _, err = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert process.returncode == 0, err.decode()
    assert "Traceback" not in err.decode(), err.decode()
    return shard, err.decode()


async def test_the_command_identifies_to_the_gateway_as_the_shard_it_was_given(
    tmp_path: Path, library: str
) -> None:
    """What Discord sees of a process started with DISCORD_SHARD_IDS: its IDENTIFY names the
    shard and the count, so the gateway sends it those shards' guilds and no other; on either
    library, whichever the install has."""
    shard, _ = await started_on_a_fake_gateway(
        library,
        TOMORI_DB_PATH=str(tmp_path / "tomori.db"),
        DISCORD_SHARD_COUNT="4",
        DISCORD_SHARD_IDS="3",
    )
    assert shard == [3, 4]


async def test_a_start_warns_of_what_the_operator_meant_and_of_nothing_else(
    tmp_path: Path, library: str
) -> None:
    """Some of the shards on SQLite, which other machines cannot share, and a misspelled
    variable are said in the log; the library's word that voice is unsupported (this bot never
    speaks) is not."""
    _, err = await started_on_a_fake_gateway(
        library,
        TOMORI_DB_PATH=str(tmp_path / "tomori.db"),
        TOMORI_DB_URL="",
        DISCORD_SHARD_COUNT="2",
        DISCORD_SHARD_IDS="0",
        TOMORI_HISTORY_LIMT="5",
    )
    warnings = [line.split(": ", 1)[1] for line in err.splitlines() if " WARNING " in line]
    assert warnings == [
        f"DISCORD_SHARD_IDS runs some of the bot's shards here on SQLite "
        f"({tmp_path / 'tomori.db'}): the processes running the others share the channels' "
        f"locks only if they run on this machine with the same TOMORI_DB_PATH; on several "
        f"machines set TOMORI_DB_URL to one PostgreSQL",
        "TOMORI_HISTORY_LIMT is set, but tomori-cog reads no such variable: did you mean "
        "TOMORI_HISTORY_LIMIT?",
    ]
    assert "voice will NOT be supported" not in err


async def test_with_json_logs_every_line_the_command_writes_is_one_json_object(
    tmp_path: Path,
) -> None:
    """TOMORI_LOG_FORMAT=json, as a collector reads the process's standard error: every line
    from start to stop is an object with its time, level, logger and message (the warnings
    among them), none of it plain text."""
    _, err = await started_on_a_fake_gateway(
        TOMORI_DB_PATH=str(tmp_path / "tomori.db"),
        TOMORI_LOG_FORMAT="json",
        TOMORI_HISTORY_LIMT="5",
    )
    lines = [json.loads(line) for line in err.splitlines()]
    assert lines
    for line in lines:
        assert {"time", "level", "logger", "message"} <= line.keys(), line
    assert {
        "level": "WARNING",
        "logger": "tomori_cog",
        "message": "TOMORI_HISTORY_LIMT is set, but tomori-cog reads no such variable: did "
        "you mean TOMORI_HISTORY_LIMIT?",
    }.items() <= next(line for line in lines if "HISTORY_LIMT" in line["message"]).items()
    assert "stop signal received: closing" in [line["message"] for line in lines]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_command_serves_health_and_metrics_where_tomori_metrics_addr_says(
    tmp_path: Path,
) -> None:
    """What an operator's health check and Prometheus ask of a running `tomori`: /healthz
    answers 200 while it runs, and /metrics serves the cog's series (the command starts the
    server around the bot it builds)."""
    address = f"127.0.0.1:{free_port()}"
    seen: dict[str, tuple[int, str]] = {}

    async def asked() -> None:
        async with ClientSession() as session:
            for path in ("/healthz", "/metrics"):
                async with session.get(f"http://{address}{path}") as response:
                    seen[path] = (response.status, await response.text())

    await started_on_a_fake_gateway(
        while_up=asked,
        TOMORI_DB_PATH=str(tmp_path / "tomori.db"),
        TOMORI_METRICS_ADDR=address,
    )
    assert seen["/healthz"][0] == 200
    status, scraped = seen["/metrics"]
    assert status == 200
    assert "# TYPE tomori_turns_total counter" in scraped


async def test_with_json_logs_an_error_in_a_library_event_is_a_json_line(
    tmp_path: Path, library: str
) -> None:
    """Discord refuses the sync of the slash commands: the library's handler fails, and what
    it says of it reaches the collector as a JSON line with its traceback (nextcord printed it
    as text), while the bot runs on."""
    async with a_fake_discord(commands_status=400, ready=True) as discord:
        process = await the_command_on(
            discord.port,
            library,
            TOMORI_DB_PATH=str(tmp_path / "tomori.db"),
            TOMORI_LOG_FORMAT="json",
        )
        assert process.stderr is not None
        seen: list[str] = []
        try:
            async with asyncio.timeout(30):
                await discord.synced.wait()
                while not any("refused by the test" in line for line in seen):
                    line = (await process.stderr.readline()).decode()
                    assert line, f"the command ended: {seen}"
                    seen.append(line)
            assert process.returncode is None, seen  # the bot runs on
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(10):
                _, rest = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    lines = [json.loads(line) for line in [*seen, *rest.decode().splitlines()]]
    failed = next(line for line in lines if "refused by the test" in line.get("exception", ""))
    assert failed["level"] == "ERROR"
    assert process.returncode == 0


async def test_malformed_requests_to_the_metrics_port_are_told_once_without_their_bytes(
    tmp_path: Path,
) -> None:
    """Anyone who reaches the metrics port can send it garbage: twenty malformed requests (a
    header past aiohttp's bound, a broken chunked body) make one INFO line naming the error's
    kind, not twenty ERRORs with tracebacks echoing the sender's bytes."""
    address = f"127.0.0.1:{free_port()}"
    host, port = address.rsplit(":", 1)
    long_header = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + b"A" * 9000 + b"STRANGER\r\n\r\n"
    bad_chunk = (
        b"POST /readyz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nSTRANGER\r\n"
    )
    answered: list[bytes] = []

    async def sent_garbage() -> None:
        for request in [long_header, bad_chunk] * 10:
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(request)
            async with asyncio.timeout(5):
                answered.append(await reader.read())  # answered 400, then closed
            writer.close()

    _, err = await started_on_a_fake_gateway(
        while_up=sent_garbage,
        TOMORI_DB_PATH=str(tmp_path / "tomori.db"),
        TOMORI_METRICS_ADDR=address,
        TOMORI_LOG_FORMAT="json",
    )
    assert all(reply.split(b" ", 2)[1] == b"400" for reply in answered), answered
    lines = [json.loads(line) for line in err.splitlines()]
    told = [line for line in lines if "malformed request" in line["message"]]
    assert len(told) == 1, told
    assert told[0]["level"] == "INFO"
    assert "exception" not in told[0]
    assert "STRANGER" not in err
    assert [line for line in lines if line["level"] == "ERROR"] == []
