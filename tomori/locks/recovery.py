"""Serving the channels no live process serves: the queues a closed process left, the locks of
one that died. A heartbeat says this process is alive and looks for them; where the database
can announce a departure (PostgreSQL), they are served as soon as it is announced."""

from __future__ import annotations

import asyncio

from tomori.locks import rules
from tomori.locks.backend import LockBackend
from tomori.locks.loops import BackgroundLoops
from tomori.locks.supervisor import TurnSupervisor


class Recovery:
    """The heartbeat and departure loops of one registry; `close` before its turns stop, so
    that no recovery begins a turn after."""

    def __init__(self, backend: LockBackend, turns: TurnSupervisor, lock_timeout_s: float) -> None:
        self._backend = backend
        self._turns = turns
        self._lock_timeout_s = lock_timeout_s
        self._loops = BackgroundLoops()

    async def start(self) -> None:
        """Start the loops, then serve what was left before this process started."""
        self._loops.start("heartbeat", self._heartbeat, pause_after_failure_s=1.0)
        self._loops.start(
            "serving what stopped processes left", self._serve_departures, pause_after_failure_s=1.0
        )
        await self._recover(await self._backend.orphaned_channels())

    async def close(self) -> None:
        await self._loops.close()

    async def _heartbeat(self) -> None:
        """Say this instance is alive, then serve the channels no live process serves.

        In a rolling restart the process that takes over started before the old one closed or
        crashed, and a channel with no new message would otherwise wait for the next start
        (or be answered only when the queue has grown too old). An outage does not make live
        owners look gone: their silence counts from the database's return (`rules.silent_s`).
        """
        # Write, then wait: after a failed write (the database away) the retry writes at once,
        # well inside the dead window that restarts once the database is back.
        await self._backend.heartbeat()
        await self._recover(await self._backend.orphaned_channels())
        await asyncio.sleep(rules.heartbeat_interval_s(self._lock_timeout_s))

    async def _serve_departures(self) -> None:
        """Serve what a process that just stopped left (its queues, a lock it could not hand
        on) as soon as it says it stopped, where the database can say so (PostgreSQL)."""
        await self._backend.wait_for_departure()
        await self._recover(await self._backend.orphaned_channels())

    async def _recover(self, channels: list[str]) -> None:
        for channel_id in channels:
            turn = await self._backend.recover(channel_id)
            if turn is not None:
                self._turns.begin(turn)
