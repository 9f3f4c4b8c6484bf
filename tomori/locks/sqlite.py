"""The lock backend on SQLite: one file, shared by the processes of one machine.

SQLite cannot tell another process that a stop request was written for it, so a process
running turns reads its rows' stop requests every `STOP_REQUEST_POLL_INTERVAL_S`: one read of
the lock table (a row per busy channel), none while it runs no turn. Within a process /kill
stops a turn at once; this bounds how late it reaches a turn another process runs. Nor can
it announce that a process stopped: the others read the departure each records as it leaves
every `DEPARTURE_POLL_INTERVAL_S`, and serve what it left.
"""

from __future__ import annotations

import asyncio

from tomori.locks.sql import SqlLockBackend

STOP_REQUEST_POLL_INTERVAL_S = 0.25
DEPARTURE_POLL_INTERVAL_S = 0.25


class SqliteLockBackend(SqlLockBackend):
    _last_departure: int | None = None
    """The newest departure this process has served (None: not read yet)."""

    async def wait_for_stop_requests(self) -> None:
        await asyncio.sleep(STOP_REQUEST_POLL_INTERVAL_S)

    async def wait_for_departure(self) -> None:
        """Return once a process recorded its departure since the last call (read every
        `DEPARTURE_POLL_INTERVAL_S`): the queues it left are served at once."""
        if self._last_departure is None:
            self._last_departure = await self._instances.last_departure()
        while True:  # polled: nothing in SQLite can wake another process
            last = await self._instances.last_departure()
            if last > self._last_departure:
                self._last_departure = last
                return
            await asyncio.sleep(DEPARTURE_POLL_INTERVAL_S)

    async def close(self) -> None:
        """Nothing to stop: it only polls."""
