"""One warning per kind of failure while the database is out of reach, and one line when it
is back: what an operator needs of an outage, not a traceback per statement.

While PostgreSQL restarts or its network is away, every statement of every loop and every held
message fails, again and again, for the same few reasons. The store notes each failure here:
the first of each kind (the error's type: refused, shutting down, timed out...) is logged, the
rest are not, and the first success ends the outage with one line saying how long it lasted.
An attempt that began before that success and fails after it (a connection asked for while the
server was starting, refused once it is up) is late news of the outage that ended, not a new
one: it is marked, not told.
An error noted here is marked, so that whoever retries it (`tomori.store.retry`, the registry's
loops, the metrics writer) and the driver's own pool log it quietly instead of again.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

log = logging.getLogger("tomori.store")

_MARK = "_tomori_outage_reported"


def reported(error: BaseException | None) -> bool:
    """Whether an outage log has already reported this error (its kind, in this outage)."""
    return bool(getattr(error, _MARK, False))


class OutageLog:
    """The outage of one database: its start, the kinds of failure seen, its end."""

    def __init__(self, description: str, mask: Callable[[str], str]) -> None:
        self._description = description
        self._mask = mask
        self._since: float | None = None
        self._kinds: set[str] = set()
        self._answered_at = float("-inf")
        self.reporting = False
        """False while the database is being opened: a failure then is the opening's error,
        which says it itself."""

    def failed(self, error: BaseException, began: float) -> None:
        """A statement or connection begun at `began` (`time.monotonic()`) failed for a reason
        that passes (the caller retries)."""
        with contextlib.suppress(AttributeError):  # a type without attributes: logged again
            setattr(error, _MARK, True)
        if not self.reporting or began < self._answered_at:
            return
        if self._since is None:
            self._since = time.monotonic()
        kind = type(error).__name__
        if kind in self._kinds:
            return
        self._kinds.add(kind)
        said = self._mask(str(error))  # a timeout says nothing: its kind says it all
        log.warning(
            "the database %s is out of reach (%s%s); answers under way finish, new messages "
            "are held and retried until it is back",
            self._description,
            kind,
            f": {said}" if said else "",
        )

    def succeeded(self) -> None:
        """A statement or connection worked: the outage, if there was one, is over."""
        self._answered_at = time.monotonic()
        if self._since is None:
            return
        # A warning, like the outage's start, so that a log kept at warnings shows the end too.
        log.warning(
            "the database %s is back after %.1fs", self._description, time.monotonic() - self._since
        )
        self._since = None
        self._kinds.clear()
