"""PostgreSQL, for bots whose processes run on several machines and share one database.

A pool of asyncpg connections. A transaction with a key first takes a transaction-scoped
advisory lock on it (`pg_advisory_xact_lock`), so every process's transactions on one channel
run one after another while other channels go on in parallel; the lock ends with the
transaction, whatever way it ends, and with the connection if the process dies. The clock is
the server's (`clock_timestamp()`, read after that lock), so hosts whose clocks differ agree.

While the server is restarting or out of reach, the errors it causes are transient: the caller
retries the whole transaction (`tomori.store.retry`). A server that goes
silent (a frozen host, a dead
route: nothing refused, nothing answered) is out of reach too: every statement, commit and wait
for a pooled connection gives up after `COMMAND_TIMEOUT_S` with a (transient) timeout, so
nothing waits for it forever, not even a bot being shut down. The password is never shown:
`description` is the URL with it masked (`DatabaseUrl`), and errors name that. An outage is
logged once per kind of failure and once when it ends (`tomori.store.outage`), not per
statement; the pool's own warning for each failed reconnection is left out for the same
failures (`_already_reported`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import asyncpg

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

from tomori.config.database_url import (
    DatabaseUrl,
    tls_environment_problem,
    tls_from_environment,
)
from tomori.store.base import Failed, Params, Row, StoreError, unheard
from tomori.store.migrations import (
    number_migrations,
    shipped_migrations,
)
from tomori.store.outage import OutageLog, reported
from tomori.store.postgres_schema import apply_migrations

POOL_MIN_SIZE = 2
POOL_MAX_SIZE = 10
"""Transactions are short (a few statements on one channel); ten connections serve a process's
admissions, hand-offs, /kills and its once-a-second progress write without queueing for long."""

CONNECT_TIMEOUT_S = 10.0
CLOSE_GRACE_S = 2.0
"""How long closing waits for the server before cutting its connections."""
COMMAND_TIMEOUT_S = 15.0
"""A statement with no answer this long is given up (and retried): a connection the network
dropped without a word would otherwise wait for TCP to notice, for hours."""

TRANSIENT: tuple[type[BaseException], ...] = (
    OSError,  # refused, reset, timed out: the server or the network is away
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,  # shutting down, starting up, crashed
    asyncpg.exceptions.InsufficientResourcesError,  # too many connections, for now
    asyncpg.exceptions.TransactionRollbackError,  # serialization failure, deadlock
    asyncpg.InterfaceError,  # the connection closed under us
    # A statement sent in the moment between the server's goodbye to a pooled connection
    # (FATAL "terminating connection", on shutdown) and its closing: "cannot switch to
    # state ...; another operation is in progress". The connection closes an instant later
    # and the pool replaces it, so the transaction, tried again, meets a new one.
    asyncpg.InternalClientError,
)


@functools.lru_cache(maxsize=256)
def numbered_placeholders(sql: str) -> str:
    """Our SQL's `?` placeholders as PostgreSQL's `$1, $2, ...` (our SQL has no `?` literal)."""
    count = 0

    def number(_: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return f"${count}"

    return re.sub(r"\?", number, sql)


def _changed(status: str) -> int:
    """Rows changed, from a command status such as `UPDATE 3` or `INSERT 0 1`."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


CLOCK = "SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8"
LOCK_THEN_CLOCK = (
    "SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8"
    " FROM (SELECT pg_advisory_xact_lock(hashtextextended($1, 0)) OFFSET 0) AS locked"
)
"""The channel's lock, then the clock, in one round trip: the subquery (kept whole by OFFSET 0)
returns its row only once the lock is held, so the time is read after any wait for it."""


class PostgresTransaction:
    def __init__(self, connection: PoolConnectionProxy[Any], now: float | None = None) -> None:
        self._connection = connection
        self._now = now

    async def now(self) -> float:
        if self._now is None:
            self._now = float(await self._connection.fetchval(CLOCK))
        return self._now

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        row: Row | None = await self._connection.fetchrow(numbered_placeholders(sql), *params)
        return row

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return list(await self._connection.fetch(numbered_placeholders(sql), *params))

    async def execute(self, sql: str, params: Params = ()) -> int:
        return _changed(await self._connection.execute(numbered_placeholders(sql), *params))

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        await self._connection.executemany(numbered_placeholders(sql), rows)


class PostgresDatabase:
    """A pool of connections to one PostgreSQL database."""

    def __init__(
        self,
        pool: asyncpg.Pool[Any],
        url: DatabaseUrl,
        outage: OutageLog,
        failed: Failed = unheard,
    ) -> None:
        self._pool = pool
        self._failed = failed
        self._url = url
        self._outage = outage
        self._in_flight: set[asyncio.Future[None]] = set()
        outage.reporting = True

    @classmethod
    async def open(cls, url: DatabaseUrl, failed: Failed = unheard) -> PostgresDatabase:
        """Connect to `url`, which errors name with its password masked.

        A server that cannot be reached, refuses the login or the TLS that `?sslmode=` asks
        for, is a `StoreError` naming the database and why, without the password."""
        outage = OutageLog(str(url), url.masked)
        problem = tls_environment_problem(url, os.environ)
        if problem is not None:
            raise StoreError(f"the database {url} cannot be used: {problem}")
        from_environment = [
            f"{name}={value!r}" for name, value in tls_from_environment(url, os.environ).items()
        ]
        try:
            pool = await asyncpg.create_pool(
                url.dsn(),
                min_size=POOL_MIN_SIZE,
                max_size=POOL_MAX_SIZE,
                timeout=CONNECT_TIMEOUT_S,
                command_timeout=COMMAND_TIMEOUT_S,
                reset=_keep_session,
                connect=functools.partial(_connect, outage),
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            why = url.masked(str(error) or type(error).__name__)
            also = f" (and {', '.join(from_environment)}, read too)" if from_environment else ""
            raise StoreError(
                f"the database {url} cannot be used ({why}): check TOMORI_DB_URL{also}, and that "
                "the server is running, lets this user in and offers the TLS asked for"
            ) from None
        return cls(pool, url, outage, failed)

    @property
    def engine(self) -> str:
        return "postgres"

    @property
    def description(self) -> str:
        return str(self._url)

    async def dedicated_connection(
        self, command_timeout: float | None = COMMAND_TIMEOUT_S
    ) -> asyncpg.Connection[Any]:
        """A connection of its own, outside the pool (to LISTEN on, for as long as it lives)."""
        connection = await _connect(
            self._outage,
            self._url.dsn(),
            timeout=CONNECT_TIMEOUT_S,
            command_timeout=command_timeout,
        )
        self._outage.succeeded()
        return connection

    @asynccontextmanager
    async def _acquire(self) -> AsyncIterator[PoolConnectionProxy[Any]]:
        """A pooled connection, cut instead of given back if its user is cancelled.

        What becomes of its use is noted in the outage log. asyncpg gives a cancelled
        connection back by asking the server to cancel what it runs and waiting for it, then
        rolling back: on a server gone silent that is the statement timeout, which a cancel (a
        closing bot's grace, above all) must not wait for. Cut, the connection ends its
        transaction on the server, which rolls it back (or, for a COMMIT already sent, keeps
        it) and frees its locks before another transaction sees them.
        """
        began = time.monotonic()
        try:
            async with self._pool.acquire(timeout=COMMAND_TIMEOUT_S) as connection:
                try:
                    yield connection
                except asyncio.CancelledError:
                    connection.terminate()
                    raise
        except Exception as error:
            if isinstance(error, TRANSIENT):
                self._outage.failed(error, began)
            if self.is_database_error(error):
                self._failed(error)
            raise
        self._outage.succeeded()

    @asynccontextmanager
    async def transaction(self, key: str | None = None) -> AsyncIterator[PostgresTransaction]:
        done = asyncio.get_running_loop().create_future()
        self._in_flight.add(done)
        try:
            async with self._acquire() as connection:
                transaction = connection.transaction()
                await transaction.start()
                try:
                    # Nearly every keyed transaction reads the clock: both in one round trip.
                    now = None if key is None else await connection.fetchval(LOCK_THEN_CLOCK, key)
                    yield PostgresTransaction(connection, None if now is None else float(now))
                except asyncio.CancelledError:
                    raise  # the connection is cut: the server rolls back as it ends
                except BaseException:
                    await transaction.rollback()
                    raise
                await transaction.commit()
        finally:
            self._in_flight.discard(done)
            done.set_result(None)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        async with self._acquire() as connection:
            return list(await connection.fetch(numbered_placeholders(sql), *params))

    async def execute(self, sql: str, params: Params = ()) -> int:
        async with self._acquire() as connection:
            return _changed(await connection.execute(numbered_placeholders(sql), *params))

    def is_transient(self, error: BaseException) -> bool:
        return isinstance(error, TRANSIENT)

    def is_database_error(self, error: BaseException) -> bool:
        return isinstance(error, (asyncpg.PostgresError, *TRANSIENT))

    async def wait_for_pending(self) -> None:
        """Wait for the transactions under way, but not for a server that stopped answering."""
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=CLOSE_GRACE_S)

    async def scrub(self) -> None:
        """Nothing a client may do: a deleted row's old version stays in the table's pages
        until autovacuum reuses them, and in the server's write-ahead log until it is
        recycled; both are the server's (docs/privacy.md)."""

    async def close(self) -> None:
        """Close the pool; a server that stopped answering gets its connections cut instead of
        a goodbye, so closing the cog (or the bot) never waits on it."""
        try:
            async with asyncio.timeout(CLOSE_GRACE_S):
                await self._pool.close()
        except TimeoutError:
            self._pool.terminate()

    async def migrate(self, migrations: Iterable[tuple[str, str]] | None = None) -> int:
        """Apply the numbered migrations not applied yet, each once; return the schema version.

        Each file runs in one transaction with the record of its number, under an advisory
        lock, so processes starting together apply it once between them. On a connection of
        its own, without the pool's statement timeout: a migration may rightly take long.
        """
        ordered = number_migrations(
            shipped_migrations("postgres") if migrations is None else migrations
        )
        latest = ordered[-1][0] if ordered else 0
        connection = await self.dedicated_connection(command_timeout=None)
        try:
            return await apply_migrations(connection, ordered, latest)
        except asyncpg.InsufficientPrivilegeError as error:
            why = self._url.masked(str(error))
            raise StoreError(
                f"the database {self._url} cannot be used ({why}): its user must be able to "
                "create tables in its schema while migrations remain to apply, and to read and "
                "write tomori's tables (run it once as their owner, then grant them)"
            ) from None
        finally:
            await connection.close()


async def _keep_session(connection: asyncpg.Connection[Any]) -> None:
    """Give a connection back to the pool as it is: asyncpg still rolls back a transaction left
    open and drops listeners, but its default reset (unlock advisory locks, close cursors,
    UNLISTEN, RESET ALL) would be one more round trip after every transaction, for session state
    these connections never get: their advisory locks end with the transaction, LISTEN is on a
    dedicated connection, and nothing is SET or left open."""


async def _connect(outage: OutageLog, *args: Any, **kwargs: Any) -> asyncpg.Connection[Any]:
    """`asyncpg.connect`, its passing failures noted in the outage log (the pool's too)."""
    began = time.monotonic()
    try:
        connection: asyncpg.Connection[Any] = await asyncpg.connect(*args, **kwargs)
    except Exception as error:
        if isinstance(error, TRANSIENT):
            outage.failed(error, began)
        raise
    return connection


def _already_reported(record: logging.LogRecord) -> bool:
    """Leave out asyncpg's pool warning (with its traceback, once per attempt) for a failed
    reconnection whose error the outage log has reported: ours, and of a passing kind."""
    return not (record.exc_info and reported(record.exc_info[1]))


logging.getLogger("asyncpg.pool").addFilter(_already_reported)
