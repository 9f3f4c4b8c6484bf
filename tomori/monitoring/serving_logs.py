"""What the metrics server logs of what strangers do to its port: a line a minute at most, and
never the bytes they sent.

The port may be reachable by anyone on the network, so whatever a client does to it (sends
garbage, opens connections by the thousand) must not write the log for them: aiohttp logs a
malformed request at ERROR with a traceback that echoes the request's bytes, asyncio logs an
accept that found no file descriptor once per attempt, thousands a second, and the server's
own refusals of connections past its cap would be as many. Each kind is told once a minute, a
malformed request in a line of our own that names its error's kind alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from aiohttp.http_exceptions import HttpProcessingError

__all__ = [
    "ACCEPT_FAILED",
    "REFUSALS",
    "REPEAT_AFTER_S",
    "REQUESTS",
    "OncePerMinute",
    "strangers_told_once_a_minute",
]

REPEAT_AFTER_S = 60.0
"""A kind of line is told again only this long after it was last told."""
ACCEPT_FAILED = "socket.accept() out of system resource"
"""How asyncio's default exception handler begins its line for an accept without a descriptor."""


class OncePerMinute(logging.Filter):
    """Lets the records `matches` picks through once per `REPEAT_AFTER_S`, rewritten by
    `retell` (None: as they are); every other record passes untouched."""

    def __init__(
        self,
        matches: Callable[[logging.LogRecord], bool],
        retell: Callable[[logging.LogRecord], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._matches = matches
        self._retell = retell
        self._clock = clock
        self._told_at = float("-inf")

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._matches(record):
            return True
        now = self._clock()
        if now - self._told_at < REPEAT_AFTER_S:
            return False
        self._told_at = now
        if self._retell is not None:
            self._retell(record)
        return True


REQUESTS = logging.getLogger("tomori.monitoring.requests")
"""Where the server's aiohttp handlers log (its `logger`): a malformed request, or a fault of
our own handlers, which is logged as aiohttp logs it."""
REFUSALS = logging.getLogger("tomori.monitoring.refused")
"""Where the server says it closed a connection past its cap."""


def _accept_failed(record: logging.LogRecord) -> bool:
    return str(record.msg).startswith(ACCEPT_FAILED)


def _bad_request(record: logging.LogRecord) -> bool:
    error = record.exc_info[1] if record.exc_info else None
    return isinstance(error, HttpProcessingError)


def _without_its_bytes(record: logging.LogRecord) -> None:
    """A malformed request's line: at INFO (aiohttp says ERROR, or DEBUG for some), naming its
    error's kind, without the traceback whose message echoes the request's bytes."""
    error = record.exc_info[1] if record.exc_info else None
    record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
    record.msg = (
        "the metrics port answered a malformed request with 400 (%s); more in the next "
        "minute are not logged"
    )
    record.args = (type(error).__name__,)
    record.exc_info = record.exc_text = record.stack_info = None


@contextmanager
def strangers_told_once_a_minute() -> Iterator[None]:
    """While the server runs: asyncio's failed accepts, malformed requests (`REQUESTS`) and
    refused connections (`REFUSALS`), each told once a minute at most."""
    quieted = [
        (logging.getLogger("asyncio"), OncePerMinute(_accept_failed)),
        (REQUESTS, OncePerMinute(_bad_request, _without_its_bytes)),
        (REFUSALS, OncePerMinute(lambda record: True)),
    ]
    for logger, quiet in quieted:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger, quiet in quieted:
            logger.removeFilter(quiet)
