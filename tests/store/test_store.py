from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.databases import DatabaseUnderTest
from tomori.store import MigrationError, SqliteDatabase, StoreError
from tomori.store.migrations import shipped_migrations
from tomori.store.sqlite import split_statements


async def test_the_database_is_in_wal_mode_with_a_busy_timeout(db_path: Path) -> None:
    store = await SqliteDatabase.open(db_path, busy_timeout_ms=1234)
    try:
        rows = await store.fetchall("PRAGMA journal_mode")
        assert rows[0][0] == "wal"
        rows = await store.fetchall("PRAGMA busy_timeout")
        assert rows[0][0] == 1234
    finally:
        await store.close()


async def test_packaged_migrations_apply_once_and_are_tracked_by_user_version(
    db_path: Path,
) -> None:
    latest = len(shipped_migrations("sqlite"))
    for _ in range(2):
        store = await SqliteDatabase.open(db_path)
        try:
            assert await store.migrate() == latest
        finally:
            await store.close()
    with closing(sqlite3.connect(db_path)) as plain:
        tables = {row[0] for row in plain.execute("SELECT name FROM sqlite_master")}
        assert {"channel_locks", "queued_triggers", "instances"} <= tables
        assert plain.execute("PRAGMA user_version").fetchone()[0] == latest


async def test_a_failing_migration_leaves_the_database_as_it_was_and_names_the_file(
    db_path: Path,
) -> None:
    migrations = [
        ("0001_first.sql", "CREATE TABLE a (x INTEGER);"),
        ("0002_broken.sql", "CREATE TABLE b (x INTEGER);\nINSERT INTO missing VALUES (1);"),
    ]
    store = await SqliteDatabase.open(db_path)
    try:
        with pytest.raises(MigrationError, match=r"0002_broken\.sql"):
            await store.migrate(migrations)
        tables = {row[0] for row in await store.fetchall("SELECT name FROM sqlite_master")}
        assert tables == {"a"}
        assert (await store.fetchall("PRAGMA user_version"))[0][0] == 1
        fixed = [migrations[0], ("0002_fixed.sql", "CREATE TABLE b (x INTEGER);")]
        assert await store.migrate(fixed) == 2
    finally:
        await store.close()


async def test_a_database_newer_than_the_code_is_refused(db_path: Path) -> None:
    store = await SqliteDatabase.open(db_path)
    try:
        await store.migrate([("0001_a.sql", "CREATE TABLE a (x);"), ("0002_b.sql", "SELECT 1;")])
        with pytest.raises(MigrationError, match="newer"):
            await store.migrate([("0001_a.sql", "CREATE TABLE a (x);")])
    finally:
        await store.close()


@pytest.mark.parametrize(
    "names",
    [["first.sql"], ["0001_a.sql", "0001_b.sql"], ["0002_late.sql"]],
)
async def test_badly_numbered_migrations_are_refused_before_anything_runs(
    db_path: Path, names: list[str]
) -> None:
    store = await SqliteDatabase.open(db_path)
    try:
        with pytest.raises(MigrationError):
            await store.migrate([(name, "CREATE TABLE t (x);") for name in names])
        assert await store.fetchall("SELECT name FROM sqlite_master") == []
    finally:
        await store.close()


def test_statements_split_on_semicolons_outside_strings_and_comments() -> None:
    sql = "-- heading\nCREATE TABLE t (x TEXT);\nINSERT INTO t VALUES ('a;b'); -- trailing\n"
    assert split_statements(sql) == [
        "-- heading\nCREATE TABLE t (x TEXT);",
        "INSERT INTO t VALUES ('a;b');",
    ]


async def test_a_transaction_is_rolled_back_when_its_body_raises(
    database: DatabaseUnderTest,
) -> None:
    store = await database.open()

    async def insert_then_fail() -> None:
        async with store.transaction() as db:
            await db.execute(
                "INSERT INTO queued_triggers (channel_id, payload, received_at)"
                " VALUES ('c', '{}', 0)"
            )
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await insert_then_fail()
    assert await store.fetchall("SELECT * FROM queued_triggers") == []


async def test_a_file_that_is_not_a_database_is_refused_and_left_alone(db_path: Path) -> None:
    garbage = b"this is a text file, not a database\n" * 100
    await asyncio.to_thread(db_path.write_bytes, garbage)
    with pytest.raises(StoreError, match=r"cannot be used .*TOMORI_DB_PATH"):
        await SqliteDatabase.open(db_path)
    assert await asyncio.to_thread(db_path.read_bytes) == garbage
