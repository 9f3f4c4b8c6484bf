"""The lock backend on SQLite: one file, shared by the processes of one machine.

SQLite cannot tell another process that a stop request was written for it, so a process
running turns reads its rows' stop requests every `STOP_REQUEST_POLL_INTERVAL_S`: one read of
the lock table (a row per busy channel), none while it runs no turn. Within a process /kill
stops a turn at once; this bounds how late it reaches a turn another process runs. Nor can
it announce that a process stopped: the queues it left wait for another's next heartbeat.
"""

from __future__ import annotations

import asyncio

from tomori.locks.sql import SqlLockBackend

STOP_REQUEST_POLL_INTERVAL_S = 0.25


class SqliteLockBackend(SqlLockBackend):
    async def wait_for_stop_requests(self) -> None:
        await asyncio.sleep(STOP_REQUEST_POLL_INTERVAL_S)

    async def wait_for_departure(self) -> None:
        """Never: the queues a stopped process left are found by the heartbeat."""
        await asyncio.Event().wait()

    async def close(self) -> None:
        """Nothing to stop: it only polls."""
