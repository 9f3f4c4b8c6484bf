"""What tomori-cog asks of a database, whichever one it is: SQLite on one machine, or PostgreSQL
shared by processes on several.

Everything that reads or writes durable state (the channel locks, the metrics) is written once
against these two protocols, in SQL both engines accept, with `?` placeholders. A driver
supplies what differs: how a transaction excludes the others, which clock it reads, which of its
errors are worth another attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from tomori.errors import TomoriError

Params = Sequence[Any]
Failed = Callable[[BaseException], None]
"""Told of each error of the database itself (a driver's error, never the caller's) that ended
a statement or a transaction: what an operator's monitoring counts."""


def unheard(error: BaseException) -> None:
    """The default `Failed`: nobody counts the database's errors."""


class Row(Protocol):
    """A result row as both drivers give it: by column name or position; iterating gives values."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...


class StoreError(TomoriError, RuntimeError):
    """The database cannot be used; the message names it (never with a password) and says why."""


class MigrationError(StoreError):
    """A migration could not be applied; the database is as it was before it."""


class Transaction(Protocol):
    """Statements that commit together, or not at all."""

    async def now(self) -> float:
        """The database's clock, in seconds since the epoch.

        Every time written to or compared with a row comes from here, so processes on hosts
        whose clocks disagree still agree on how old a row is: PostgreSQL's server clock, or
        on SQLite the host's, which a step of the wall clock does not move
        (`tomori.store.host_clock`).
        """
        ...

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None: ...

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; return the number of rows it changed."""
        ...

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None: ...


class Database(Protocol):
    """A connection (or pool) to the one database every process of a bot shares."""

    @property
    def engine(self) -> str:
        """ "sqlite" or "postgres": which schema files it takes, which lock backend serves it."""
        ...

    @property
    def description(self) -> str:
        """The database for log lines and errors: a file path, or a URL without its password."""
        ...

    def transaction(self, key: str | None = None) -> AbstractAsyncContextManager[Transaction]:
        """Begin a transaction; commit when the body returns, roll back if it raises.

        Transactions given the same `key` (a channel) never overlap, in this process or any
        other, so a read-decide-write under one key is atomic: two processes deciding who holds
        a channel never both see it free. Transactions without a key only need row atomicity.
        """
        ...

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """One read, outside any transaction."""
        ...

    async def execute(self, sql: str, params: Params = ()) -> int:
        """One statement in a transaction of its own; return the number of rows it changed."""
        ...

    async def migrate(self) -> int:
        """Apply the shipped migrations not applied yet; return the schema version."""
        ...

    def is_transient(self, error: BaseException) -> bool:
        """Whether `error` will likely pass if the same transaction is tried again: another
        process holds the lock, or the server is restarting or out of reach."""
        ...

    def is_database_error(self, error: BaseException) -> bool:
        """Whether `error` came from the database (as opposed to a defect of ours)."""
        ...

    async def wait_for_pending(self) -> None:
        """Return once every statement already waiting for this connection has run."""
        ...

    async def scrub(self) -> None:
        """After an erase: leave no copy of the deleted rows in the database's files beside
        its live pages, as far as the engine lets a client (SQLite: the `-wal` file)."""
        ...

    async def close(self) -> None: ...
