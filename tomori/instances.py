"""Which processes are serving from a database file, and whether a lock's owner is still alive.

Each registry registers an instance row and refreshes its heartbeat. A lock whose owner is gone
is recovered at once when the owner ran on this host (its process is gone, or its pid now
belongs to another process, as after a container restart where the bot is pid 1 again), and
after a missed heartbeat window otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from tomori.store import Store

log = logging.getLogger(__name__)

MIN_HEARTBEAT_INTERVAL_S = 1.0
MISSED_HEARTBEATS_FOR_DEATH = 3


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


class Instance:
    """This registry's row in `instances`, kept fresh by a heartbeat task it owns."""

    def __init__(self, store: Store, heartbeat_interval_s: float) -> None:
        self.instance_id = uuid.uuid4().hex
        self._store = store
        self._process = current_process()
        self._interval_s = max(MIN_HEARTBEAT_INTERVAL_S, heartbeat_interval_s)
        self._heartbeat: asyncio.Task[None] | None = None

    @property
    def dead_after_s(self) -> float:
        return self._interval_s * MISSED_HEARTBEATS_FOR_DEATH

    async def register(self) -> None:
        now = time.time()
        process = self._process
        await self._store.execute(
            "INSERT INTO instances (instance_id, host, pid, process_token, started_at,"
            " heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)",
            (self.instance_id, process.host, process.pid, process.token, now, now),
        )
        self._heartbeat = asyncio.create_task(
            self._beat(), name=f"tomori-heartbeat-{self.instance_id}"
        )

    async def unregister(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            await asyncio.gather(self._heartbeat, return_exceptions=True)
            self._heartbeat = None
        try:
            await self._store.execute(
                "DELETE FROM instances WHERE instance_id = ?", (self.instance_id,)
            )
        except aiosqlite.Error:  # a busy database must not stop a close: the row goes stale
            log.warning("could not remove this instance's row; it expires with its heartbeat")

    async def is_alive(self, db: aiosqlite.Connection, instance_id: str) -> bool:
        """Whether the instance that wrote `instance_id` can still be serving its locks."""
        if instance_id == self.instance_id:
            return True
        cursor = await db.execute(
            "SELECT host, pid, process_token, heartbeat_at FROM instances WHERE instance_id = ?",
            (instance_id,),
        )
        row = await cursor.fetchone()
        if row is None:
            return False
        if row["host"] == self._process.host and process_token(row["pid"]) != row["process_token"]:
            return False
        return time.time() - float(row["heartbeat_at"]) <= self.dead_after_s

    async def forget_dead(self, db: aiosqlite.Connection) -> None:
        """Drop the rows of instances that are gone, inside the caller's transaction."""
        cursor = await db.execute(
            "SELECT instance_id FROM instances WHERE instance_id != ?", (self.instance_id,)
        )
        for row in await cursor.fetchall():
            if not await self.is_alive(db, row["instance_id"]):
                await db.execute(
                    "DELETE FROM instances WHERE instance_id = ?", (row["instance_id"],)
                )

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                await self._store.execute(
                    "UPDATE instances SET heartbeat_at = ? WHERE instance_id = ?",
                    (time.time(), self.instance_id),
                )
            except aiosqlite.Error:
                log.warning("heartbeat write failed; will retry", exc_info=True)
