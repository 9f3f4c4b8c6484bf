"""Which processes serve locks from the database, and whether a lock's owner is still alive.

Each registry registers an instance row and refreshes its heartbeat, on the database's clock.
Whether an owner is alive is `rules.is_alive`: at once when it ran on this host and its process
is gone, after a missed heartbeat window otherwise, that window counted from the database's
start or this process's return to it at the earliest (`up_since`).
"""

from __future__ import annotations

import math
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from tomori.locks import rules
from tomori.locks.rules import InstanceRow
from tomori.store.base import Database, Transaction

DEPARTURES_KEPT_S = 3600.0
"""A departure is read within seconds; older rows only grow the table."""


class InstanceRows:
    """This instance's row in `instances`, and the liveness of the others'."""

    def __init__(
        self,
        database: Database,
        lock_timeout_s: float,
        server_up_since: Callable[[Transaction], Awaitable[float]],
    ) -> None:
        """`server_up_since`: when the database server last started, in a transaction."""
        self.instance_id = uuid.uuid4().hex
        self._db = database
        self._lock_timeout_s = lock_timeout_s
        self._server_up_since = server_up_since
        self._process = current_process()
        self._out_of_touch = False
        """A heartbeat failed, and none succeeded since: this process lost the database."""
        self._back_since = -math.inf
        """When, on the database's clock, this process last got the database back."""

    async def register(self) -> None:
        process = self._process
        async with self._db.transaction() as tx:
            now = await tx.now()
            await tx.execute(
                "INSERT INTO instances (instance_id, host, pid, process_token, started_at,"
                " heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
                (self.instance_id, process.host, process.pid, process.token, now, now),
            )

    async def heartbeat(self) -> None:
        try:
            async with self._db.transaction() as tx:
                now = await tx.now()
                await tx.execute(
                    "UPDATE instances SET heartbeat_at = ? WHERE instance_id = ?",
                    (now, self.instance_id),
                )
        except Exception:
            self._out_of_touch = True
            raise
        if self._out_of_touch:
            self._out_of_touch, self._back_since = False, now

    async def up_since(self, tx: Transaction) -> float:
        """Since when another's silence counts (`rules.silent_s`): the server's start, or this
        process's return to the database after losing it, whichever is later. A process cut
        off from the database (the network, a failover) was likely not cut off alone: the
        others' rows are as old as its own, and they deserve the same windows to write again.
        Until its own heartbeat says it is back, it judges nobody gone on old rows at all."""
        if self._out_of_touch:
            return await tx.now()
        return max(await self._server_up_since(tx), self._back_since)

    async def unregister(self, tx: Transaction) -> None:
        """Remove this instance's row and record its departure (see `departures`), at once."""
        now = await tx.now()
        await tx.execute("DELETE FROM instances WHERE instance_id = ?", (self.instance_id,))
        await tx.execute(
            "INSERT INTO departures (instance_id, departed_at) VALUES (?, ?)",
            (self.instance_id, now),
        )
        await tx.execute("DELETE FROM departures WHERE departed_at < ?", (now - DEPARTURES_KEPT_S,))

    async def last_departure(self) -> int:
        """The id of the newest departure recorded (0 when none is): a process that stops
        cleanly writes one as it leaves."""
        row = await self._db.fetchall("SELECT COALESCE(MAX(id), 0) AS last FROM departures")
        return int(row[0]["last"])

    async def live_count(self) -> int:
        """The processes whose heartbeat is within the window, this one included (at least 1)."""
        async with self._db.transaction() as tx:
            now = await tx.now()
            rows = await tx.fetchall(
                "SELECT COUNT(*) AS live FROM instances"
                " WHERE heartbeat_at >= ? AND instance_id != ?",
                (now - self._lock_timeout_s, self.instance_id),
            )
        return 1 + int(rows[0]["live"])

    async def forget_dead(self) -> None:
        """Drop the rows of instances that are gone."""
        async with self._db.transaction() as tx:
            now, up_since = await tx.now(), await self.up_since(tx)
            rows = await tx.fetchall(
                "SELECT instance_id FROM instances WHERE instance_id != ?", (self.instance_id,)
            )
            for row in rows:
                if not await self.is_alive(tx, row["instance_id"], now, up_since):
                    await tx.execute(
                        "DELETE FROM instances WHERE instance_id = ?", (row["instance_id"],)
                    )

    async def is_alive(
        self, tx: Transaction, instance_id: str, now: float, up_since: float
    ) -> bool:
        if instance_id == self.instance_id:
            return True
        row = await tx.fetchone(
            "SELECT host, pid, process_token, heartbeat_at FROM instances WHERE instance_id = ?",
            (instance_id,),
        )
        return rules.is_alive(
            None if row is None else InstanceRow(*row),
            here_host=self._process.host,
            token_of=process_token,
            now=now,
            up_since=up_since,
            lock_timeout_s=self._lock_timeout_s,
        )


# -- which process this is, in words another process on the same host can check
@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    host: str
    pid: int
    token: str


def process_token(pid: int) -> str | None:
    """A string naming this exact process (pid plus start time), or None if it is not running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return _token_without_proc(pid)
    # Field 22 is the start time; the command name (field 2) may hold spaces, so split after it.
    start_time = stat.rsplit(")", 1)[1].split()[19]
    return f"{pid}:{start_time}"


def _token_without_proc(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return str(pid)


def current_process() -> ProcessIdentity:
    pid = os.getpid()
    return ProcessIdentity(socket.gethostname(), pid, process_token(pid) or str(pid))
