"""What a registry does while its turns run: write their progress, hear /kills for them.

`ProgressWriter` writes the progress of every touched turn in one transaction, at most once a
second: a write per channel would be a task, a round trip and a wait on the database per
channel and second, and at hundreds of streaming channels that backlog would delay every
admission behind it. A turn that just showed its first message is written at once (with
whatever else waits): a crash before that reached the database would have it run again.
After each write it learns which locks this instance still holds; a turn whose lock is gone or
held by another turn was taken over, and is stopped. A write that fails
is tried again with the next one, so no turn's last progress is lost to an outage.

`StopRequestReader` hears the /kills (and the stop words and follow-ups of a turn's user) other
processes wrote into the lock rows of turns this process runs. It reads only while this process
runs turns, each time the backend says requests may have come (every 250 ms on SQLite; when
PostgreSQL announces one).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping

from tomori.locks.backend import LockBackend, Progress
from tomori.locks.lease import Lease, LeaseState
from tomori.locks.vocabulary import KillReason

PROGRESS_WRITE_INTERVAL_S = 1.0
"""Progress reaches the database at most this often, however many chunks and channels."""


class ProgressWriter:
    def __init__(self, backend: LockBackend, taken_over: Callable[[Lease], None]) -> None:
        self._backend = backend
        self._taken_over = taken_over
        self._dirty: set[Lease] = set()
        self._due = asyncio.Event()
        self._urgent = asyncio.Event()

    def mark(self, lease: Lease) -> None:
        if lease not in self._dirty:
            self._dirty.add(lease)
            self._due.set()

    def mark_urgent(self, lease: Lease) -> None:
        """Write this lease's progress now, not after the second's pause: it just answered,
        and a crash before that reaches the database would have its turn run again."""
        self.mark(lease)
        self._urgent.set()

    def forget(self, lease: Lease) -> None:
        self._dirty.discard(lease)

    async def step(self) -> None:
        await self._due.wait()
        self._due.clear()
        self._urgent.clear()  # what is marked urgent from here on cuts the pause below short
        written_at = time.monotonic()
        batch = [lease for lease in self._dirty if lease.state is not LeaseState.RELEASED]
        self._dirty.clear()
        try:
            if batch:
                await self._write(batch)
        except BaseException:
            # Not written (the database away): write it next time, or a turn whose last news
            # was "under a watchdog" would read as stale once the database is back.
            for lease in batch:
                self.mark(lease)
            raise
        # Not in a `finally`: a step cancelled mid-write (the registry closing) must end at once,
        # and a sleep there outlived the cancellation, holding a close up for a second. A failed
        # write is paced by the loop's own pause.
        pause = max(0.0, written_at + PROGRESS_WRITE_INTERVAL_S - time.monotonic())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(pause):
                await self._urgent.wait()

    async def _write(self, batch: list[Lease]) -> None:
        held = await self._backend.record_progress(
            [
                Progress(
                    lease.turn.channel_id,
                    lease.turn.turn_id,
                    lease.idle_s(),
                    lease.watchdogs,
                    lease.answered,
                )
                for lease in batch
            ]
        )
        for lease in batch:
            if (lease.turn.channel_id, lease.turn.turn_id) not in held:
                self._taken_over(lease)


class StopRequestReader:
    def __init__(self, backend: LockBackend, leases: Mapping[str, Lease]) -> None:
        self._backend = backend
        self._leases = leases
        self._turns_running = asyncio.Event()

    def wake(self) -> None:
        """A turn began: start reading, if not already."""
        self._turns_running.set()

    async def step(self) -> None:
        if not self._leases:
            self._turns_running.clear()
            await self._turns_running.wait()
        await self._backend.wait_for_stop_requests()
        for request in await self._backend.stop_requests():
            lease = self._leases.get(request.channel_id)
            if lease is None or lease.turn.turn_id != request.turn_id:
                continue
            if request.requester_id is not None:
                lease.request_stop()
            elif request.interrupted is not None:
                lease.interrupt(KillReason(request.interrupted))
