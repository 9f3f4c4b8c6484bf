"""What the metrics server logs of what strangers do to its port: a line a minute at most, and
never the bytes they sent.

The port may be reachable by anyone on the network, so whatever a client does to it (sends
garbage, opens connections by the thousand) must not write the log for them: asyncio logs an
accept that found no file descriptor once per attempt, thousands a second, and the server's
own refusals of connections past its cap would be as many. Each kind is told once a minute.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["ACCEPT_FAILED", "REPEAT_AFTER_S", "OncePerMinute", "accept_failures", "once_a_minute"]

REPEAT_AFTER_S = 60.0
"""A kind of line is told again only this long after it was last told."""
ACCEPT_FAILED = "socket.accept() out of system resource"
"""How asyncio's default exception handler begins its line for an accept without a descriptor."""


class OncePerMinute(logging.Filter):
    """Lets the records `matches` picks through once per `REPEAT_AFTER_S`; every other record
    passes untouched."""

    def __init__(
        self,
        matches: Callable[[logging.LogRecord], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._matches = matches
        self._clock = clock
        self._told_at = float("-inf")

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._matches(record):
            return True
        now = self._clock()
        if now - self._told_at < REPEAT_AFTER_S:
            return False
        self._told_at = now
        return True


def accept_failures() -> OncePerMinute:
    """For the `asyncio` logger: its "socket.accept() out of system resource", once a minute."""
    return OncePerMinute(lambda record: str(record.msg).startswith(ACCEPT_FAILED))


def once_a_minute(name: str) -> logging.Logger:
    """The logger `name`, every line of which is told once a minute at most."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, OncePerMinute) for f in logger.filters):
        logger.addFilter(OncePerMinute(lambda record: True))
    return logger
