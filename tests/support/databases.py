"""The databases lock tests run against: a real SQLite file, or a real PostgreSQL database.

`DatabaseUnderTest` opens the engine's own `Database` as the cog would (`open_database` on the
settings it gives), reads and writes rows the way another process would (through a connection
of its own), and records what the cog sent (`RecordingDatabase`), so one test body proves the
same behaviour on both engines.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tomori.config.settings import Settings
from tomori.store import Database, Row, Transaction
from tomori.store.base import Params
from tomori.store.connect import open_database


@dataclass
class DatabaseUnderTest:
    engine: str
    environment: dict[str, str]
    """The variables that point a bot (or a bot process) at this database."""
    opened: list[Database] = field(default_factory=list)

    def settings(self, **overrides: Any) -> Settings:
        """Settings that point the cog at this database, read as a bot reads them."""
        return replace(Settings.from_env(self.environment), **overrides)

    @property
    def base(self) -> Settings:
        return self.settings()

    async def open(self) -> Database:
        """A connection of the cog's own kind, migrated; closed when the test ends."""
        database = await open_database(self.base)
        self.opened.append(database)
        return database

    async def rows(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        """What another process reads now."""
        async with self._connection() as database:
            return [tuple(row) for row in await database.fetchall(sql, params)]

    async def execute(self, sql: str, params: Params = ()) -> int:
        """A write by another process."""
        async with self._connection() as database:
            return await database.execute(sql, params)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Database]:
        database = await open_database(self.base)
        try:
            yield database
        finally:
            await database.close()

    async def close(self) -> None:
        for database in self.opened:
            await database.close()


def sqlite_database(folder: Path) -> DatabaseUnderTest:
    return DatabaseUnderTest("sqlite", {"TOMORI_DB_PATH": str(folder / "tomori.db")})


def postgres_database(url: str) -> DatabaseUnderTest:
    return DatabaseUnderTest("postgres", {"TOMORI_DB_URL": url})


class RecordingDatabase:
    """A `Database` that notes each transaction's statements (and each lone statement) the cog
    sends through it: what the database is asked to do, whichever engine it is."""

    def __init__(self, inner: Database) -> None:
        self._inner = inner
        self.transactions: list[list[str]] = []
        self.statements: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @asynccontextmanager
    async def transaction(self, key: str | None = None) -> AsyncIterator[Transaction]:
        async with self._inner.transaction(key) as tx:
            statements: list[str] = []
            self.transactions.append(statements)
            yield _RecordingTransaction(tx, statements)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        self.statements.append(sql)
        return await self._inner.fetchall(sql, params)

    async def execute(self, sql: str, params: Params = ()) -> int:
        self.statements.append(sql)
        return await self._inner.execute(sql, params)


class _RecordingTransaction:
    def __init__(self, inner: Transaction, statements: list[str]) -> None:
        self._inner = inner
        self._statements = statements

    async def now(self) -> float:
        return await self._inner.now()

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        self._statements.append(sql)
        return await self._inner.fetchone(sql, params)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        self._statements.append(sql)
        return await self._inner.fetchall(sql, params)

    async def execute(self, sql: str, params: Params = ()) -> int:
        self._statements.append(sql)
        return await self._inner.execute(sql, params)

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        self._statements.append(sql)
        await self._inner.executemany(sql, rows)
