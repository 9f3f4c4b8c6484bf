"""Files whose read failed or hung a moment ago: later turns name them instead of waiting again.

A message stays in its channel's history for many turns, and each turn reads the files the
history shows. A file whose read failed (an HTTP error, a refused connection), ran out its
deadline, or hung until `/kill` stopped the turn would cost every later turn in the channel the
same wait, up to the read's deadline: after a `/kill` on a hanging image, the next message was
answered only once its turn had waited on that image again. So such a file is remembered for
`FORGET_AFTER_S`, and meanwhile the model is told it could not be read, as it was the first
time. A read stopped before it had run `HUNG_AFTER_S` is not held against its file: a `/kill`
that came at once says nothing of the file.

A file is known by the host and path of its URL (`fetch.where`): Discord's CDN signs its URLs
with a query that changes when they are refreshed, and the path, which holds the channel's and
the attachment's IDs, names the file. The memory is the cog's own, in this process: a reload
or a restart forgets it.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from tomori_cog.reading.fetch import where

FORGET_AFTER_S = 600.0
"""Ten minutes: long enough that a conversation going on in the channel is not held up by the
same file again (each of its turns shows the message), short enough that a CDN that was down
for a while, or a link that failed once, is tried again when the channel speaks next."""
HUNG_AFTER_S = 1.0
"""A read stopped (by `/kill`) after running this long counts as hung: Discord's CDN answers
in a fraction of a second, and a user who kills has waited longer than that."""
MOST_REMEMBERED = 1_000
"""Files remembered at most, the oldest forgotten first, however many channels fail."""


class UnreadableFiles:
    """The files whose read failed or hung within `FORGET_AFTER_S`, at most `MOST_REMEMBERED`,
    by when it failed, the oldest first."""

    def __init__(self) -> None:
        self._failed_at: OrderedDict[str, float] = OrderedDict()

    def failed(self, url: str) -> None:
        """The read of `url` failed or ran out its deadline: do not try it again soon."""
        key = where(url)
        self._failed_at.pop(key, None)
        self._failed_at[key] = time.monotonic()
        while len(self._failed_at) > MOST_REMEMBERED:
            self._failed_at.popitem(last=False)

    def stopped(self, url: str, after_s: float) -> bool:
        """The read of `url` was stopped after running `after_s`: whether that counts as hung
        (and `url` is then not tried again soon)."""
        if after_s < HUNG_AFTER_S:
            return False
        self.failed(url)
        return True

    def failed_lately(self, url: str) -> float | None:
        """How long ago the read of `url` failed, if within `FORGET_AFTER_S`; else None."""
        now = time.monotonic()
        while self._failed_at and next(iter(self._failed_at.values())) < now - FORGET_AFTER_S:
            self._failed_at.popitem(last=False)
        failed_at = self._failed_at.get(where(url))
        return None if failed_at is None else now - failed_at
