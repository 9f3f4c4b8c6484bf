"""The PostgreSQL the suite starts for itself: what the backend's tests stand on.

It must behave as a deployment's server does (a password on TCP, databases that do not leak
into each other) and its controls must really cut clients off, or the fault tests built on
them would pass without proving anything.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from tests.support.postgres import PostgresServer, find_binaries, must_run

# What a client sees when the server goes away under it: the server's own "terminating
# connection" message, or the connection already closed or refused.
OUTAGE = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError)


async def test_the_url_carries_a_password_and_a_wrong_one_is_refused(pg_url: str) -> None:
    connection = await asyncpg.connect(pg_url)
    try:
        assert await connection.fetchval("SELECT current_user") == "tomori"
        assert await connection.fetchval("SHOW listen_addresses") == "127.0.0.1"
    finally:
        await connection.close()

    parts = urlsplit(pg_url)
    assert parts.password
    wrong = parts._replace(netloc=f"tomori:not-{parts.password}@{parts.hostname}:{parts.port}")
    with pytest.raises(asyncpg.InvalidPasswordError):
        await asyncpg.connect(urlunsplit(wrong))


@pytest.mark.parametrize("run", ["first", "second"])
async def test_each_test_gets_a_fresh_empty_database(pg_url: str, run: str) -> None:
    """Both runs create the same table: the second would fail on the first's database."""
    connection = await asyncpg.connect(pg_url)
    try:
        tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        assert await connection.fetchval(tables) == 0
        await connection.execute("CREATE TABLE left_behind (run text)")
        await connection.execute("INSERT INTO left_behind VALUES ($1)", run)
    finally:
        await connection.close()


async def test_stop_then_start_comes_back_on_the_same_url(
    pg_server: PostgresServer, pg_url: str
) -> None:
    connection = await asyncpg.connect(pg_url)
    try:
        async with asyncpg.create_pool(pg_url, min_size=1, max_size=1) as pool:
            await connection.execute("CREATE TABLE kept (n int)")
            await connection.execute("INSERT INTO kept VALUES (1)")
            assert await pool.fetchval("SELECT 1") == 1

            await pg_server.stop()
            with pytest.raises(OUTAGE):
                await connection.fetchval("SELECT 1")
            with pytest.raises(OUTAGE):
                await pool.fetchval("SELECT 1")

            await pg_server.start()
            assert await pool.fetchval("SELECT n FROM kept") == 1  # the pool reconnects itself
        assert connection.is_closed()
        again = await asyncpg.connect(pg_url)
        assert await again.fetchval("SELECT n FROM kept") == 1
        await again.close()
    finally:
        await connection.close()


async def test_terminating_connections_closes_a_live_one(
    pg_server: PostgresServer, pg_url: str
) -> None:
    connection = await asyncpg.connect(pg_url)
    try:
        assert await connection.fetchval("SELECT 1") == 1
        assert await pg_server.terminate_connections() >= 1
        with pytest.raises(OUTAGE):
            await connection.fetchval("SELECT 1")
        assert connection.is_closed()
    finally:
        await connection.close()
    fresh = await asyncpg.connect(pg_url)  # the server itself runs on
    assert await fresh.fetchval("SELECT 1") == 1
    await fresh.close()


def test_a_missing_postgres_fails_under_ci_and_skips_elsewhere() -> None:
    assert must_run({"CI": "true"})
    assert must_run({"CI": "1"})
    assert not must_run({})
    assert not must_run({"CI": ""})
    assert not must_run({"CI": "false"})


def executable(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_binaries_are_found_on_path_first_then_in_the_newest_versioned_folder(
    tmp_path: Path,
) -> None:
    versioned = str(tmp_path / "lib" / "*" / "bin")
    assert find_binaries("", versioned) is None

    for version in ("9.6", "15"):
        for name in ("initdb", "postgres"):
            executable(tmp_path / "lib" / version / "bin" / name)
    executable(tmp_path / "lib" / "16" / "bin" / "initdb")  # no server next to it: not usable
    assert find_binaries("", versioned) == tmp_path / "lib" / "15" / "bin"

    own = tmp_path / "own"
    executable(own / "initdb")
    executable(own / "postgres")
    path = os.pathsep.join([str(tmp_path / "empty"), str(own)])
    assert find_binaries(path, versioned) == own


async def test_a_frozen_server_answers_nothing_until_thawed_and_still_shuts_down(
    pg_server: PostgresServer,
) -> None:
    connection = await asyncpg.connect(pg_server.url())
    try:
        pg_server.freeze()
        with pytest.raises(TimeoutError):  # its backend is frozen too, not only the postmaster
            await connection.fetchval("SELECT 1", timeout=0.5)
        await pg_server.stop()  # thaws it first: a stopped process acts on no signal
        await pg_server.start()
        again = await asyncpg.connect(pg_server.url())
        assert await again.fetchval("SELECT 1") == 1
        await again.close()
    finally:
        connection.terminate()
