"""PostgreSQL's schema brought up to date: the shipped migrations applied once between every
process that starts at the same moment."""

from __future__ import annotations

from typing import Any

import asyncpg

from tomori.store.base import MigrationError
from tomori.store.migrations import Migration, newer_than_known

MIGRATION_LOCK = 0x746F6D6F7269  # any constant: one migrating process at a time


async def apply_migrations(
    connection: asyncpg.Connection[Any], ordered: list[Migration], latest: int
) -> int:
    """Apply `ordered` (up to `latest`) on `connection`: each file in one transaction with the
    record of its number, under an advisory lock, so processes starting together apply it once
    between them; return the schema version. A database newer than this code is refused."""
    if await connection.fetchval("SELECT to_regclass('tomori_schema')") is None:
        await connection.execute(  # an already migrated database needs no CREATE right
            "CREATE TABLE IF NOT EXISTS tomori_schema (version INTEGER NOT NULL)"
        )
    current = await _version(connection)
    if current > latest:
        raise newer_than_known(current, latest, "TOMORI_DB_URL")
    for number, name, sql in ordered:
        try:
            async with connection.transaction():
                await connection.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
                current = await _version(connection)
                if current >= number:
                    continue
                await connection.execute(sql)
                await connection.execute("DELETE FROM tomori_schema")
                await connection.execute("INSERT INTO tomori_schema (version) VALUES ($1)", number)
        except asyncpg.PostgresError as error:
            raise MigrationError(f"migration {name} failed: {error}") from error
    return await _version(connection)


async def _version(connection: asyncpg.Connection[Any]) -> int:
    version = await connection.fetchval("SELECT max(version) FROM tomori_schema")
    return int(version or 0)
