"""A real PostgreSQL server that the test suite starts itself, and controls for fault tests.

The PostgreSQL backend is proved against the real server, not a fake: this module finds the
installed binaries, creates a throwaway cluster in a temporary folder and runs it on a free port
of 127.0.0.1, with password authentication (scram-sha-256) so the app's URL carries a password
as a deployment's does. Fault tests stop and start the server, cut every client connection (or
the one reading a table, mid-statement), or freeze it (a host that went silent).
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import itertools
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO

import asyncpg

INSTALL_HINT = (
    "PostgreSQL not found: install it (Debian: apt-get install postgresql) or put initdb on PATH"
)
# Debian and Ubuntu install the server binaries here, one folder per major version, off PATH.
VERSIONED_FOLDERS = "/usr/lib/postgresql/*/bin"
ROLE = "tomori"
# The oldest server with what the controls below use: pg_terminate_backend's wait (14) and
# DROP DATABASE ... WITH (FORCE) (13).
OLDEST_MAJOR = 14
READY_WITHIN = 60.0
STOPPED_WITHIN = 30.0


def must_run(environ: Mapping[str, str]) -> bool:
    """Whether a missing PostgreSQL fails the tests that need it instead of skipping them.

    Under CI it fails: a runner that lost its PostgreSQL must not turn the backend's tests into
    quiet skips. On a developer's machine without PostgreSQL the rest of the suite still runs.
    """
    return environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def find_binaries(path: str | None, versioned: str = VERSIONED_FOLDERS) -> Path | None:
    """The folder holding `initdb` and `postgres`: the one `initdb` on `path` (a PATH string;
    None for this process's) comes from, else the newest of the versioned folders, else None."""
    folders = []
    on_path = shutil.which("initdb", path=path)
    if on_path is not None:
        folders.append(Path(on_path).resolve().parent)  # through /usr/local/bin symlinks
    folders += sorted(map(Path, glob.glob(versioned)), key=_major, reverse=True)
    for folder in folders:
        if all(os.access(folder / name, os.X_OK) for name in ("initdb", "postgres")):
            return folder
    return None


def _major(folder: Path) -> tuple[int, ...]:
    """`/usr/lib/postgresql/9.6/bin` -> (9, 6), so that 15 sorts above 9.6."""
    try:
        return tuple(int(part) for part in folder.parent.name.split("."))
    except ValueError:
        return ()


def _unprivileged_user() -> pwd.struct_passwd | None:
    """Who runs initdb and the server: PostgreSQL refuses to run as root, so as root the system
    user `postgres` (there wherever the package is installed), else `nobody`; None when this
    process is not root and runs them itself."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root with no `postgres` or `nobody` user to run PostgreSQL as")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One cluster in a temporary folder, its server process, and the controls fault tests use.

    The server listens on 127.0.0.1 only and keeps its unix socket in the cluster's folder, so
    it neither shows on the network nor meets a system server's socket in /var/run/postgresql.
    """

    def __init__(self, binaries: Path, folder: Path) -> None:
        self.binaries = binaries
        self.folder = folder
        self.port = _free_port()
        self._password = secrets.token_urlsafe(24)
        self._user = _unprivileged_user()
        self._numbers = itertools.count(1)
        self._process: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:  # never the password: a failing test may print the fixture
        return f"PostgresServer(127.0.0.1:{self.port}, {self.folder})"

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def url(self, database: str = "postgres") -> str:
        """The URL an app is given: role, password, host, port and database."""
        return f"postgresql://{ROLE}:{self._password}@127.0.0.1:{self.port}/{database}"

    def initdb(self) -> None:
        """Create the cluster: a superuser `tomori` whose password every TCP login must give."""
        if self._user is not None:
            os.chown(self.folder, self._user.pw_uid, self._user.pw_gid)
        password_file = self.folder / "password"
        password_file.write_text(self._password)
        if self._user is not None:
            os.chown(password_file, self._user.pw_uid, self._user.pw_gid)
        # -N: no fsync of the new files; a test cluster that dies with the machine is fine.
        command = [str(self.binaries / "initdb"), "-D", str(self.data), "-U", ROLE]
        command += [f"--pwfile={password_file}", "-A", "scram-sha-256", "-E", "UTF8"]
        try:
            with open(self.folder / "initdb.log", "wb+") as log:
                process = self._spawn([*command, "--locale=C", "-N"], log)
                try:
                    code = process.wait(READY_WITHIN)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                    raise
                log.seek(0)
                if code != 0:
                    output = log.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"initdb failed ({code}):\n{output}")
        finally:
            password_file.unlink()
        major = int((self.data / "PG_VERSION").read_text().split(".")[0])
        if major < OLDEST_MAJOR:
            raise RuntimeError(f"the tests need PostgreSQL {OLDEST_MAJOR} or later, not {major}")

    def launch(self) -> None:
        """Start the server on its port and data folder and wait until it accepts connections."""
        options = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.folder),
            # Durability is not under test and the cluster is thrown away: without these each
            # commit and checkpoint waits for the disk of a loaded machine.
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
        }
        settings = [part for name, value in options.items() for part in ("-c", f"{name}={value}")]
        with open(self.folder / "server.log", "ab") as log:
            command = [str(self.binaries / "postgres"), "-D", str(self.data), *settings]
            self._process = self._spawn(command, log)
        self._wait_until_ready(self._process)

    def shut_down(self) -> None:
        """Fast shutdown (SIGINT: clients are disconnected, then a checkpoint), as `pg_ctl stop`
        does; an immediate one (SIGQUIT), then SIGKILL, for a server that does not finish."""
        if self.running:
            self.thaw()  # a frozen server would never act on the signals below
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        for sig in (signal.SIGINT, signal.SIGQUIT):
            process.send_signal(sig)
            try:
                process.wait(STOPPED_WITHIN)
                return
            except subprocess.TimeoutExpired:
                continue
        process.kill()
        process.wait()

    async def stop(self) -> None:
        """Fast shutdown, off the event loop: the app under test keeps running meanwhile."""
        await asyncio.to_thread(self.shut_down)

    async def start(self) -> None:
        """Start the server again on the same port and data folder, so the same URLs work."""
        await asyncio.to_thread(self.launch)

    async def terminate_connections(self) -> int:
        """Close every client connection from the server's side (`pg_terminate_backend`), as an
        administrator or a failover does; returns how many. Each is gone when this returns."""
        admin = await asyncpg.connect(self.url())
        try:
            count = await admin.fetchval(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))"
                " FROM pg_stat_activity"
                " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            )
        finally:
            await admin.close()
        return int(count)

    @asynccontextmanager
    async def reads_held(
        self, database: str, table: str
    ) -> AsyncIterator[Callable[[], Awaitable[None]]]:
        """Every statement on `table` of `database` waits (an exclusive lock, held until the
        block ends); yields `cut_reader`, which waits for a client to be held there and cuts its
        connection mid-statement, as a failover or an administrator does. Deterministic, where
        cutting every connection now and then only sometimes meets a read."""
        admin = await asyncpg.connect(self.url(database))
        try:
            holding = admin.transaction()
            await holding.start()
            await admin.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")

            async def cut_reader() -> None:
                async with asyncio.timeout(20):  # the server announces no waiter: asked
                    while not await admin.fetchval(  # noqa: ASYNC110
                        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))"
                        " FROM pg_locks WHERE relation = $1::regclass AND NOT granted",
                        table,
                    ):
                        await asyncio.sleep(0.01)

            yield cut_reader
            await holding.rollback()
        finally:
            await admin.close()

    def freeze(self) -> None:
        """Stop every server process (SIGSTOP): a host gone silent. Connections stay open and
        new ones are accepted by the kernel, but nothing is ever answered, until `thaw`."""
        self._signal_all(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal_all(signal.SIGCONT)

    def _signal_all(self, sig: signal.Signals) -> None:
        """The postmaster first (it forks no more), then each child: backends and auxiliary
        processes each run in a session of their own, so the postmaster's group misses them."""
        assert self._process is not None
        postmaster = self._process.pid
        os.kill(postmaster, sig)
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended meanwhile
            if int(fields[1]) == postmaster:  # its parent
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(stat.parent.name), sig)

    async def cut_off(self, database: str, *, cut: bool = True) -> None:
        """Let nobody connect to `database` (and cut who is connected), or let them again: the
        server stays up, as when the network between the bot's hosts and it goes away."""
        await self._admin(f"ALTER DATABASE {database} ALLOW_CONNECTIONS {str(not cut).lower()}")
        if cut:
            await self.terminate_connections()

    async def create_database(self) -> str:
        """A new, empty database (t_1, t_2, ...) for one test; returns its name."""
        name = f"t_{next(self._numbers)}"
        await self._admin(f"CREATE DATABASE {name}")
        return name

    async def drop_database(self, name: str) -> None:
        """Drop a test's database, closing what the test left connected to it; starts the
        server first when a test left it stopped, so the next test finds it running."""
        if not self.running:
            await self.start()
        await self._admin(f"DROP DATABASE {name} WITH (FORCE)")

    async def _admin(self, statement: str) -> None:
        admin = await asyncpg.connect(self.url())
        try:
            await admin.execute(statement)
        finally:
            await admin.close()

    def _spawn(self, command: list[str], output: IO[bytes]) -> subprocess.Popen[bytes]:
        """Start initdb or the server as the unprivileged user, in the cluster's folder, with the
        environment stripped of PG* variables (a developer's PGDATA or PGPORT must not steer it).
        Its own session: the terminal's Ctrl-C reaches pytest, which then shuts the server down
        itself, rather than the server taking the SIGINT as a fast shutdown mid-test."""
        user = self._user
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=self.folder,
            env={key: value for key, value in os.environ.items() if not key.startswith("PG")},
            user=None if user is None else user.pw_uid,
            group=None if user is None else user.pw_gid,
            extra_groups=None if user is None else [],
            start_new_session=True,
        )

    def _wait_until_ready(self, process: subprocess.Popen[bytes]) -> None:
        """Wait for the server's own word that it accepts connections: the status line of
        postmaster.pid, which `pg_ctl start -w` reads too."""
        deadline = time.monotonic() + READY_WITHIN
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited on start:\n{self._log_tail()}")
            try:
                lines = (self.data / "postmaster.pid").read_text().splitlines()
            except FileNotFoundError:
                lines = []
            if len(lines) >= 8 and lines[0] == str(process.pid) and lines[7].strip() == "ready":
                return
            time.sleep(0.02)
        self.shut_down()
        raise RuntimeError(f"PostgreSQL not ready within {READY_WITHIN:.0f} s:\n{self._log_tail()}")

    def _log_tail(self) -> str:
        return (self.folder / "server.log").read_text(errors="replace")[-2000:]


@contextmanager
def running_postgres(binaries: Path) -> Iterator[PostgresServer]:
    """A started server on a new cluster; shut down and its folder removed on exit."""
    folder = Path(tempfile.mkdtemp(prefix="tomori-pg-"))
    try:
        server = PostgresServer(binaries, folder)
        server.initdb()
        server.launch()
        try:
            yield server
        finally:
            server.shut_down()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
