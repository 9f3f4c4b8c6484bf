"""The lock backend on PostgreSQL: processes on several machines, one database.

A /kill written for a turn another process runs is announced at commit (`NOTIFY tomori_stop`,
its payload the owner's instance id), and the owner, which listens on a connection of its own
while it runs turns, reads its stop requests at once instead of on a timer. While that
connection is down (the server restarting), the owner reads every `POLL_WHILE_DEAF_S` until it
is back; and it reads every `SAFETY_READ_S` anyway, for a notice lost as the connection broke.
A listening connection that ends (the server cut it, or went away) wakes the owner at once, so
it listens again without waiting for that safety read: a /kill sent meanwhile is not late.

A process that stops cleanly announces it as it unregisters (`NOTIFY tomori_left`, its payload
the stopping instance's id), after its turns have handed their channels back: the others, which
listen from their start, serve at once the queues and locks it left, instead of at their next
heartbeat (up to a third of `CHANNEL_LOCK_TIMEOUT_MS` later). The heartbeat still finds what an
announcement lost with a broken connection, or a crashed process, left.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any, Protocol

import asyncpg

from tomori.locks.sql import SqlLockBackend
from tomori.store.base import Database, Transaction

log = logging.getLogger("tomori.locks")

CHANNEL = "tomori_stop"
DEPARTURES = "tomori_left"
POLL_WHILE_DEAF_S = 0.25
SAFETY_READ_S = 5.0
RELISTEN_S = 1.0
"""While the server is away, how often the wait for departures tries to listen again."""


class ListeningDatabase(Database, Protocol):
    async def dedicated_connection(self) -> asyncpg.Connection[Any]:
        """A connection outside the pool, to LISTEN on for as long as it lives."""
        ...


class PostgresLockBackend(SqlLockBackend):
    def __init__(
        self,
        database: ListeningDatabase,
        lock_timeout_s: float,
        queue_max_age_s: float,
        queue_per_member: int,
    ) -> None:
        super().__init__(database, lock_timeout_s, queue_max_age_s, queue_per_member)
        self._postgres = database
        self._listener: asyncpg.Connection[Any] | None = None
        self._connecting = asyncio.Lock()
        self._listened = False
        self._announced = asyncio.Event()
        self._departed = asyncio.Event()

    async def _announce_stop(self, tx: Transaction, owner: str) -> None:
        await tx.execute("SELECT pg_notify(?, ?)", (CHANNEL, owner))

    async def _announce_departure(self, tx: Transaction) -> None:
        await tx.execute("SELECT pg_notify(?, ?)", (DEPARTURES, self.instance_id))

    async def wait_for_departure(self) -> None:
        while True:
            if await self._listening():
                break
            await asyncio.sleep(RELISTEN_S)  # meanwhile the heartbeat finds what was left
        await self._departed.wait()
        self._departed.clear()  # the read that follows sees every departure committed so far

    async def _database_up_since(self, tx: Transaction) -> float:
        # Every heartbeat and progress write stopped while the server was down; a restart
        # longer than a dead or stale window must not make the processes that outlived it
        # look dead to the first one back.
        row = await tx.fetchone(
            "SELECT EXTRACT(EPOCH FROM pg_postmaster_start_time())::float8 AS up_since"
        )
        return -math.inf if row is None else float(row["up_since"])

    async def wait_for_stop_requests(self) -> None:
        if not await self._listening():
            await asyncio.sleep(POLL_WHILE_DEAF_S)
            return
        try:
            async with asyncio.timeout(SAFETY_READ_S):
                await self._announced.wait()
        except TimeoutError:
            pass
        self._announced.clear()  # the read that follows sees every request committed so far

    async def _listening(self) -> bool:
        """Whether the listening connection is up, (re)connecting it if not."""
        async with self._connecting:  # the stop-request and departure waits share it
            if self._listener is not None and not self._listener.is_closed():
                return True
            self._listener = None
            listener = None
            try:
                listener = await self._postgres.dedicated_connection()
                listener.add_termination_listener(self._deaf)
                await listener.add_listener(CHANNEL, self._heard)
                await listener.add_listener(DEPARTURES, self._heard_departure)
            except Exception as error:
                if listener is not None:  # connected, but not listening: not kept
                    listener.terminate()
                if not self._postgres.is_transient(error):
                    raise
                return False
            self._listener = listener
            # What came while it was down was not heard: read it now.
            self._announced.set()
            if self._listened:
                self._departed.set()
            self._listened = True
            return True

    def _heard(self, connection: object, pid: int, channel: str, payload: object) -> None:
        if payload == self.instance_id:
            self._announced.set()

    def _heard_departure(self, connection: object, pid: int, channel: str, payload: object) -> None:
        if payload != self.instance_id:
            self._departed.set()

    def _deaf(self, connection: object) -> None:
        if connection is self._listener:  # not one closed on purpose
            # Wake up both waits: listen again, and read what came meanwhile.
            self._announced.set()
            self._departed.set()

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None and not listener.is_closed():
            try:
                await listener.close(timeout=2)
            except Exception:  # a connection the server already dropped: nothing to close
                listener.terminate()
