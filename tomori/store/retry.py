"""Waiting out a database that is busy or out of reach, without losing what was asked of it.

A backup, a long migration or a second bot under load can hold SQLite's write lock for longer
than one busy timeout; a PostgreSQL server may restart, or its network go away for a while. A
write that must not be lost (admitting a message, handing a channel on) is then tried again
until it succeeds, the caller gives up (a deadline, or the registry closing), or it is
cancelled: each attempt is one transaction, so a retry repeats the whole read-decide-write and
never half of it. The wait is logged once when it starts and once when it ends, not per attempt,
and only at debug level when the store has reported the outage itself (`tomori.store.outage`):
an outage is one warning, not one per message held.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from tomori.errors import TomoriError
from tomori.store.outage import reported

log = logging.getLogger(__name__)

RETRY_PAUSE_S = 0.05
"""Pause between two attempts, so the caller queued behind this one on the store gets a turn."""

MAX_HELD = 1_000
"""Writes waiting for the database at once, at most. A write takes milliseconds, so only an
outage gathers this many; each holds what it was asked for (a Discord message) in memory."""


class GaveUp(TomoriError):
    """The database stayed busy until the caller stopped waiting for it."""


async def until_not_busy[T](
    what: str,
    attempt: Callable[[], Awaitable[T]],
    is_transient: Callable[[BaseException], bool],
    *,
    keep_trying: Callable[[], bool] = lambda: True,
) -> T:
    """Run `attempt` until the database lets it through; `GaveUp` once not `keep_trying`.

    Only errors `is_transient` accepts are retried; any other propagates.

    `what` names the write for the log ("admitting message 42 in channel 7").
    """
    started: float | None = None
    level = logging.WARNING
    while True:
        try:
            result = await attempt()
        except Exception as error:
            if not is_transient(error):
                raise
            if started is None:
                started = time.monotonic()
                level = logging.DEBUG if reported(error) else logging.WARNING
                log.log(
                    level,
                    "the database is busy or out of reach (%s); retrying %s until it succeeds",
                    str(error) or type(error).__name__,
                    what,
                )
            if not keep_trying():
                log.warning(
                    "gave up %s after %.1fs of a busy database", what, time.monotonic() - started
                )
                raise GaveUp(what) from error
            await asyncio.sleep(RETRY_PAUSE_S)
            continue
        if started is not None:
            log.log(
                min(level, logging.INFO),
                "%s succeeded after %.1fs of a busy database",
                what,
                time.monotonic() - started,
            )
        return result


class InArrivalOrder:
    """One admission per key at a time, in arrival order: a retried message is never overtaken.

    Without it, a message that arrived later could find the database free in the pause
    between two attempts of an earlier one and be queued (or answered) first.
    """

    def __init__(self) -> None:
        self._gates: dict[str, tuple[asyncio.Lock, int]] = {}
        self._waiting = 0
        self._most = MAX_HELD

    def is_full(self, what: str) -> bool:
        """Whether `MAX_HELD` writes wait already, of every key: `what` is then not held (the
        caller says it failed), and the log says why."""
        if self._waiting < self._most:
            return False
        log.error(
            "not holding %s: %d writes already wait for the database, the most kept in memory",
            what,
            self._waiting,
        )
        return True

    @asynccontextmanager
    async def turn_of(self, key: str) -> AsyncIterator[None]:
        gate, users = self._gates.get(key, (asyncio.Lock(), 0))
        self._gates[key] = (gate, users + 1)
        self._waiting += 1
        try:
            async with gate:
                yield
        finally:
            self._waiting -= 1
            gate, users = self._gates[key]
            if users == 1:
                del self._gates[key]
            else:
                self._gates[key] = (gate, users - 1)
