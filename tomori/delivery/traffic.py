"""What this process's requests to Discord met: their pace, the 429s by scope, invalid requests.

Discord bans a bot's IP for an hour once it makes `BAN_THRESHOLD` invalid requests (401, 403,
and 429 except those of a "shared" resource) within ten minutes. The libraries retry 429s on
their own, so neither a bot author nor an admin sees them coming: `Traffic` counts every
response the library's HTTP client receives, and `warning` speaks long before the ban.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_S = 600.0
"""Discord's window for invalid requests: ten minutes."""
BAN_THRESHOLD = 10_000
"""Invalid requests within `WINDOW_S` that ban the IP for an hour."""
WARN_AT = BAN_THRESHOLD // 10
"""Warn at a tenth of the ban: a bot this far along is being refused all the time."""
PACE_WINDOW_S = 60
"""The seconds the request pace is shown for."""


@dataclass(frozen=True, slots=True)
class TrafficReport:
    """The numbers `/tomori status` and the log show."""

    per_second: float
    """Requests per second over the last minute."""
    busiest_second: int
    """The most requests in one second of the last minute."""
    rate_limited: dict[str, int]
    """429s of the last ten minutes, by scope (`global`, `user`, `shared`)."""
    invalid: int
    """Invalid requests of the last ten minutes (what Discord bans for)."""

    def line(self) -> str:
        scopes = ", ".join(f"{scope} {n}" for scope, n in sorted(self.rate_limited.items()))
        return (
            f"Discord requests: {self.per_second:.1f}/s (busiest second {self.busiest_second});"
            f" 429s in 10 min: {scopes or 'none'}; invalid requests in 10 min: {self.invalid}"
            f" of {BAN_THRESHOLD:,} allowed"
        )


class Traffic:
    """Counts of the responses this process received from Discord (see the module)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._per_second: Counter[int] = Counter()
        self._rate_limited: deque[tuple[float, str]] = deque()
        self._invalid: deque[float] = deque()
        self._warned = False

    def seen(self, status: int, scope: str | None) -> None:
        """A response arrived with `status` (and, for a 429, Discord's `X-RateLimit-Scope`)."""
        now = self._clock()
        self._per_second[int(now)] += 1
        if status == 429:
            self._rate_limited.append((now, scope or "user"))
        if status in (401, 403) or (status == 429 and scope != "shared"):
            self._invalid.append(now)
        self._forget(now)

    def report(self) -> TrafficReport:
        now = self._clock()
        self._forget(now)
        this_second = int(now)
        seconds = [self._per_second[this_second - ago] for ago in range(1, PACE_WINDOW_S + 1)]
        return TrafficReport(
            per_second=sum(seconds) / PACE_WINDOW_S,
            busiest_second=max([*seconds, self._per_second[this_second]]),
            rate_limited=dict(Counter(scope for _, scope in self._rate_limited)),
            invalid=len(self._invalid),
        )

    def warning(self) -> str | None:
        """Once per crossing, a warning when invalid requests near the ban (None otherwise)."""
        invalid = len(self._invalid)
        if invalid < WARN_AT:
            self._warned = False
            return None
        if self._warned:
            return None
        self._warned = True
        return (
            f"{invalid} invalid requests to Discord in 10 minutes: at {BAN_THRESHOLD:,} Discord"
            " bans this IP for an hour. Something refuses the bot's requests (a missing"
            " permission, a revoked token, rate limits): see the 429s by scope in /tomori status"
        )

    def _forget(self, now: float) -> None:
        oldest = now - WINDOW_S
        while self._rate_limited and self._rate_limited[0][0] < oldest:
            self._rate_limited.popleft()
        while self._invalid and self._invalid[0] < oldest:
            self._invalid.popleft()
        for second in [s for s in self._per_second if s < now - PACE_WINDOW_S - 1]:
            del self._per_second[second]
