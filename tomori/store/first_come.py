"""The order in which callers get the one SQLite connection: the earliest message first.

A turn needs several statements before its model is asked (the channel's settings, its
admission, the queue, its tools), and each waits its turn for the connection. With a plain
first-in-first-out lock, N messages that arrive together interleave: every turn's first
statement runs, then every turn's second, and so on, so all N turns reach their models
together, after all N turns' statements: the first message waits as long as the last. Their
answers then all end together too, and their last texts all want Discord at the same moment.
Ordering the waiters by when their message arrived lets the first turn finish its statements
first: turns start one after another, the first at once.

A message's handler says when it arrived (`arrived`); the turn it starts inherits that, as an
asyncio task inherits its creator's context. Work no message started (heartbeats, a lock's
progress, the stop poll, an admin's command) goes before any message's: it is short, and it
keeps the locks alive.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from contextvars import ContextVar
from types import TracebackType

_ARRIVED_AT: ContextVar[float] = ContextVar("tomori_arrived_at", default=0.0)


def arrived(at: float) -> None:
    """The work of the current task (and the tasks it starts) is for a message that arrived
    `at` (any clock, as long as every message uses the same one)."""
    _ARRIVED_AT.set(at)


class FirstComeLock:
    """A lock whose waiters get it in the order their messages arrived (see the module).

    Like `asyncio.Lock`, it has no owner: whoever holds it may hand the release to another
    task. Waiters of one arrival get it first come, first served.
    """

    def __init__(self) -> None:
        self._held = False
        self._waiting: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def locked(self) -> bool:
        return self._held

    @property
    def waiting(self) -> int:
        """Callers waiting for the lock now."""
        return sum(1 for waiter in self._waiting if not waiter[2].done())

    async def acquire(self, *, after_waiting: bool = False) -> None:
        """Wait for the lock. `after_waiting` queues behind every caller waiting now, whenever
        its message came (to know they have all been served)."""
        if not self._held:
            self._held = True
            return
        arrival = _ARRIVED_AT.get()
        if after_waiting:
            arrival = max([arrival, *(waiter[0] for waiter in self._waiting)])
        granted = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (arrival, next(self._order), granted))
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self.release()  # handed over as this caller was cancelled: pass it on
            else:
                granted.cancel()
            raise

    def release(self) -> None:
        """Hand the lock to the first waiter still waiting, or free it."""
        while self._waiting:
            granted = heapq.heappop(self._waiting)[2]
            if not granted.done():
                granted.set_result(None)
                return
        self._held = False

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
