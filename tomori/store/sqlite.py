"""SQLite, the embedded default database: one file, shared by the processes of one machine.

One aiosqlite connection per registry, in WAL mode (readers never wait for the writer) with a
busy timeout (two processes on one file wait for each other instead of failing; a write that
must not be lost retries past it, see `tomori.store.retry`). Statements of one transaction must
not interleave with another coroutine's statements on the same connection, so every use goes
through one lock, which serves the earliest message's work first (`tomori.store.first_come`).
Every transaction takes the file's write lock at once (BEGIN IMMEDIATE), which serialises them
all, whatever their key; the clock is the host's, and never steps (`tomori.store.host_clock`).

A caller cancelled while it awaits a statement (a bot being stopped cancels what it is doing)
does not stop the statement: it still runs in the connection's thread. A BEGIN that gets the
write lock after its caller gave up would leave the connection inside a transaction nobody
owns, and every later transaction would fail. So a caller that leaves by an exception does not
release the connection itself: a settling task (`_settle`) waits for what it left running, rolls
back whatever is still open, and only then lets the next caller in. The cancelled caller
returns at once; it is the next one that waits, as it would have for the thread anyway.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from tomori.store.base import Failed, MigrationError, Params, Row, StoreError, unheard
from tomori.store.first_come import FirstComeLock
from tomori.store.host_clock import HostClock, anchored, this_host
from tomori.store.migrations import newer_than_known, number_migrations, shipped_migrations

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5_000
"""The default of `TOMORI_DB_BUSY_TIMEOUT_MS`: one wait for another connection's write lock."""


class SqliteTransaction:
    """A transaction on the connection its `SqliteDatabase` holds the lock of."""

    def __init__(self, connection: aiosqlite.Connection, clock: Callable[[], float]) -> None:
        self._connection = connection
        self._clock = clock

    async def now(self) -> float:
        return self._clock()

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        async with self._connection.execute(sql, params) as cursor:
            row: Row | None = await cursor.fetchone()
            return row

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        async with self._connection.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    async def execute(self, sql: str, params: Params = ()) -> int:
        async with self._connection.execute(sql, params) as cursor:
            return cursor.rowcount

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        await self._connection.executemany(sql, rows)


class SqliteDatabase:
    """A serialised aiosqlite connection: single statements and explicit transactions."""

    def __init__(
        self,
        connection: aiosqlite.Connection,
        path: str,
        clock: HostClock | None = None,
        failed: Failed = unheard,
    ) -> None:
        self._connection = connection
        self._failed = failed
        self._path = path
        self._host_clock = this_host() if clock is None else clock
        self._clock: Callable[[], float] = _not_migrated
        """The host's clock, once `migrate` has found this boot's anchor."""
        self._lock = FirstComeLock()
        self._settling: set[asyncio.Task[None]] = set()

    @property
    def engine(self) -> str:
        return "sqlite"

    @property
    def description(self) -> str:
        return self._path

    @classmethod
    async def open(
        cls,
        path: Path | str,
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        clock: HostClock | None = None,
        failed: Failed = unheard,
    ) -> SqliteDatabase:
        """Open (or create) the database file in WAL mode with a busy timeout.

        A file that is not a SQLite database, or cannot be written, is refused with a
        `StoreError` naming it, and is left exactly as it was.

        Writability is asked of the kernel before SQLite sees the file: SQLite opens a
        write-protected file read-only without a word, and in WAL mode even writes to it go
        on (into the `-wal` file beside it) until a checkpoint fails. `os.access` answers for
        this process, so a file only root may write is writable to a bot running as root, and
        an immutable one is not, even to root.
        """
        if await asyncio.to_thread(_is_read_only, path):
            raise _unusable(path, "it is read-only")
        try:
            connection = await _not_keeping_the_process_alive(
                aiosqlite.connect(path, isolation_level=None)
            )
        except sqlite3.Error as error:
            raise _unusable(path, str(error)) from error
        try:
            connection.row_factory = sqlite3.Row
            await _pragma(connection, f"busy_timeout = {int(busy_timeout_ms)}")
            await _set_up(connection, busy_timeout_ms / 1000)
        except sqlite3.Error as error:
            await connection.close()
            raise _unusable(path, str(error)) from error
        except BaseException:
            await connection.close()
            raise
        return cls(connection, str(path), clock, failed)

    @property
    def connection(self) -> aiosqlite.Connection:
        """The raw connection, for tracing; use the methods below to read and write."""
        return self._connection

    async def close(self) -> None:
        await asyncio.gather(*self._settling, return_exceptions=True)
        await self._connection.close()

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement in its own transaction; return the number of rows it changed."""
        async with self._exclusive() as connection, connection.execute(sql, params) as cursor:
            return cursor.rowcount

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        async with self._exclusive() as connection, connection.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    @asynccontextmanager
    async def _exclusive(self) -> AsyncIterator[aiosqlite.Connection]:
        """The connection, for this caller alone until it is out of any transaction again.

        Leaving by an exception (a cancel above all) hands the connection to `_settle`
        instead of releasing it: a statement the caller left may still run in the thread.
        """
        await self._lock.acquire()
        try:
            yield self._connection
        except BaseException as error:
            if isinstance(error, sqlite3.Error):
                self._failed(error)
            settling = asyncio.create_task(self._settle(), name="tomori-sqlite-settle")
            self._settling.add(settling)
            settling.add_done_callback(self._settling.discard)
            raise
        self._lock.release()

    async def _settle(self) -> None:
        """Roll back what a caller that left by an exception may have left open; then release.

        The connection's thread runs its calls in order, so the rollback runs after whatever
        the caller left running (a BEGIN still waiting for the write lock, a COMMIT): once it
        returns, the connection is out of any transaction, whatever those did. sqlite3's
        `rollback` does nothing outside a transaction.
        """
        try:
            await self._connection.rollback()
        except (sqlite3.Error, ValueError) as error:  # ValueError: the connection is closed
            log.warning("could not roll back a transaction left open: %s", error)
        finally:
            self._lock.release()

    async def wait_for_pending(self) -> None:
        """Return once every statement and transaction already waiting for the store has run.

        It takes no database lock, so it returns even while another process keeps SQLite busy
        (unless a cancelled BEGIN still waits for it: that one is waited out first).
        """
        await self._lock.acquire(after_waiting=True)
        self._lock.release()

    async def scrub(self) -> None:
        """Copy the `-wal` file into the database and empty it (`wal_checkpoint(TRUNCATE)`).

        A delete writes the pages it changed to the `-wal` file, after the frames that still
        hold the deleted words, which stay there until a checkpoint; `secure_delete` (set at
        open) zeroes what a delete frees in the file itself. A reader in another process
        still on older pages keeps the checkpoint from finishing (after the busy timeout):
        logged, and the next scrub, or SQLite's own checkpoint, ends it.
        """
        async with (
            self._exclusive() as connection,
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)") as cursor,
        ):
            row = await cursor.fetchone()
        if row is not None and row[0]:
            log.warning(
                "%s: another process was reading, so the -wal file could not be emptied after"
                " an erase: the next checkpoint empties it",
                self._path,
            )

    @asynccontextmanager
    async def transaction(self, key: str | None = None) -> AsyncIterator[SqliteTransaction]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back if the body raises.

        IMMEDIATE takes the write lock at once, so a read-decide-write sequence is atomic across
        processes: two registries deciding who holds a channel never both see it free. It
        excludes every other transaction, so `key` needs no lock of its own. The rollback
        is `_exclusive`'s, so a cancel at BEGIN or COMMIT is rolled back as one in the body is.
        """
        async with self._exclusive() as connection, _immediate(connection):
            yield SqliteTransaction(connection, self._clock)

    def is_transient(self, error: BaseException) -> bool:
        """Another connection holds the lock past the busy timeout."""
        return isinstance(error, sqlite3.OperationalError) and _is_busy(error)

    def is_database_error(self, error: BaseException) -> bool:
        return isinstance(error, sqlite3.Error)

    async def migrate(self, migrations: Iterable[tuple[str, str]] | None = None) -> int:
        """Apply the numbered migrations not applied yet, each once; return the schema version.

        `migrations` is (file name, SQL) pairs; by default the shipped `migrations/sqlite/*.sql`.
        Each file runs in one transaction together with its `PRAGMA user_version` bump, so a
        failing file leaves the database exactly as it was and the error names the file.
        The shipped schema's clock is then anchored (`host_clock`), in a transaction of its
        own.
        """
        ordered = number_migrations(
            shipped_migrations("sqlite") if migrations is None else migrations
        )
        latest = ordered[-1][0] if ordered else 0
        async with self._exclusive() as connection:
            current = await _user_version(connection)
            if current > latest:
                raise newer_than_known(current, latest, "TOMORI_DB_PATH")
            for number, name, sql in ordered:
                await _apply(connection, number, name, sql)
            if migrations is None:
                async with _immediate(connection):
                    self._clock = await anchored(connection, self._host_clock)
            return await _user_version(connection)


async def _apply(connection: aiosqlite.Connection, number: int, name: str, sql: str) -> None:
    """One migration file, with its version bump, in one transaction (`_exclusive`'s)."""
    try:
        async with _immediate(connection):
            # Read again inside the write lock: another process may have just applied it.
            if await _user_version(connection) >= number:
                return
            for statement in split_statements(sql):
                await connection.execute(statement)
            await connection.execute(f"PRAGMA user_version = {number}")
    except sqlite3.Error as error:
        raise MigrationError(f"migration {name} failed: {error}") from error


@asynccontextmanager
async def _immediate(connection: aiosqlite.Connection) -> AsyncIterator[None]:
    """BEGIN IMMEDIATE ... COMMIT. Not the ROLLBACK: a body that raises leaves the connection
    by an exception, which `SqliteDatabase._exclusive` rolls back once nothing of it runs."""
    await connection.execute("BEGIN IMMEDIATE")
    yield
    await connection.execute("COMMIT")


async def _set_up(connection: aiosqlite.Connection, busy_timeout_s: float) -> None:
    """WAL mode, NORMAL sync, deleted content zeroed (`secure_delete`, so an erased text
    leaves the file's free pages too), and a read of the header (which fails if the file is not
    SQLite).

    Several processes starting together on a new file all switch it to WAL, and SQLite does not
    wait out the busy timeout there: a connection that must raise its shared lock while another
    does the same is refused at once ("database is locked"), to avoid a deadlock. So a busy
    refusal is tried again, for as long as the busy timeout would have waited.
    """
    deadline = time.monotonic() + busy_timeout_s
    while True:
        try:
            for pragma in (
                "journal_mode = WAL",
                "synchronous = NORMAL",
                "secure_delete = ON",
                "user_version",
            ):
                await _pragma(connection, pragma)
            return
        except sqlite3.OperationalError as error:
            if not _is_busy(error) or time.monotonic() >= deadline:
                raise
            await asyncio.sleep(random.uniform(0.005, 0.05))


def _is_busy(error: sqlite3.OperationalError) -> bool:
    """Another connection holds the lock (SQLITE_BUSY or SQLITE_LOCKED)."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(error) or "busy" in str(error)


def _is_read_only(path: Path | str) -> bool:
    return os.path.exists(path) and not os.access(path, os.W_OK)


def _unusable(path: Path | str, why: str) -> StoreError:
    return StoreError(
        f"the database {str(path)!r} cannot be used ({why}): point TOMORI_DB_PATH at a "
        f"writable SQLite file, or at a new path to start afresh"
    )


def _not_migrated() -> float:
    raise StoreError("the database's clock is read before it was migrated (migrate() anchors it)")


def split_statements(sql: str) -> list[str]:
    """Split a script into complete statements (`executescript` would commit on its own)."""
    statements: list[str] = []
    pending = ""
    for piece in sql.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if _strip_comments(pending).strip(" \t\r\n;"):
                statements.append(pending.strip())
            pending = ""
    if _strip_comments(pending).strip(" \t\r\n;"):
        raise MigrationError(f"unterminated statement: {pending.strip()[:80]!r}")
    return statements


def _strip_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


async def _pragma(connection: aiosqlite.Connection, pragma: str) -> None:
    """Run a pragma to its end, its cursor closed: a statement left unfinished (a row not
    read) makes a later COMMIT fail while anything (a log record's arguments) holds it."""
    async with connection.execute(f"PRAGMA {pragma}") as cursor:
        await cursor.fetchall()


async def _user_version(connection: aiosqlite.Connection) -> int:
    async with connection.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


def _not_keeping_the_process_alive(connection: aiosqlite.Connection) -> aiosqlite.Connection:
    """Make the connection's worker thread a daemon, before it starts.

    aiosqlite runs each connection in a thread of its own that ends only when the connection
    is closed; as an ordinary thread it keeps the interpreter from exiting. A bot script that
    returns without closing its bot (or whose loop was stopped while the cog was closing)
    would then hang at exit forever. SQLite in WAL mode is safe against a process that ends
    mid-write, as it is against a crash; a bot that closes properly closes the connection.
    """
    thread = getattr(connection, "_thread", connection)  # aiosqlite < 0.20: it is the thread
    if isinstance(thread, threading.Thread):
        thread.daemon = True
    return connection
