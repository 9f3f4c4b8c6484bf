"""One bot token's request budget: what keeps every process of the bot under Discord's limits.

Discord allows a bot token about 50 requests a second in all (the global limit), and each
channel a few writes every few seconds (its buckets). A 429 is not free: Discord counts it
toward the invalid requests that ban the bot's IP for an hour, and the libraries only react to
429s (discord.py paces nothing globally; nextcord paces one process, never the bot's others).
So the cog's own requests ask here first:

- `RequestBudget` hands out the token's requests at `rate_per_s`, split evenly between the
  bot's live processes (they share the database, which counts them), with a small burst. When
  requests wait, the most urgent goes first (`Urgency`): the history read a turn starts with,
  a turn's first text and notices, an answer's last text, then intermediate edits (which
  coalesce while they wait: the writer composes its text only once its turn comes; they also
  wait out a backlog, since their answer's last text will carry them), then typing, then a
  trigger's progress marks (which wait out a backlog too), then tidy-ups (an ended answer's
  Stop button taken away, an answer's take buttons put on or off), which also wait for room
  to spare in their channel's bucket holding no place in it (`ChannelPace.spare_in`).
- `ChannelPace` keeps each channel within its own bucket, so a request never leaves while
  Discord would refuse it, and never waits for another channel's bucket.

Both wait without a task of their own: a waiter is woken by a timer the last grant set, and a
cancelled waiter (the writer's deadline, `/kill`) gives its place, or its granted request, back.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from tomori.delivery.port import Urgency
from tomori.store.outage import reported

log = logging.getLogger(__name__)

GLOBAL_RATE_PER_S = 47.0
"""The whole token's pace: Discord's 50 a second less three, for the requests the cog does
not make itself (the library's own calls, a bot's other commands; interaction responses are
not counted by Discord) and for requests granted in one second that a busy event loop puts on
the wire in the next. The pace binds where many answers end together, each needing its last
text sent: 200 of them take 4.3 s at 47 a second, 4.4 s at 45."""
BURST = 1
"""Requests a quiet token may send at once before the pace applies, split between processes
(each keeps at least one). A burst and the pace together must stay under Discord's 50 in any
one second with room for event-loop lag: at 1,000 channels a burst of 4 and 50 ms of lag put 52
on the wire in one second, and at 47 a second a burst of 2 put 51."""
BACKLOG_WAIT_S = 0.1
"""A request that waited this long for the budget found a backlog: the token is saturated."""
BACKLOG_QUIET_S = 0.5
"""How long after the last backlog intermediate requests (`Urgency.MORE` and below) still wait.
In a backlog every request granted to an intermediate flush or edit is one more the answers
after it wait for, and it is wasted as soon as the same answer's last text follows: at 200
channels asked at once, before their history was read, those were 125 of 725 requests."""
CHANNEL_WRITES = 5
"""Writes (creates and edits together) a channel takes per `CHANNEL_WINDOW_S`: Discord's
documented message bucket, counted for both kinds so neither can be refused."""
CHANNEL_WINDOW_S = 5.25
"""Discord's five seconds, and a margin for the clocks of two machines."""
SPARE_POLL_S = 0.05
"""How soon a request that waits for room to spare looks again while another of its key waits."""


@dataclass(order=True)
class _Waiter:
    urgency: Urgency
    order: int
    granted: asyncio.Future[None] = field(compare=False)
    since: float = field(compare=False)


class RequestBudget:
    """The token's requests, granted at a pace, most urgent first (see the module)."""

    def __init__(
        self,
        rate_per_s: float = GLOBAL_RATE_PER_S,
        burst: int = BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._total_rate = rate_per_s
        self._total_burst = burst
        self._clock = clock
        self._processes = 1
        self._tokens = float(burst)
        self._filled_at = clock()
        self._waiting: list[_Waiter] = []
        self._order = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._backlog_at = float("-inf")
        """When a request that waited `BACKLOG_WAIT_S` or more was last granted."""
        self.granted = 0
        """Requests granted since the start (read by the status)."""

    @property
    def rate_per_s(self) -> float:
        """This process's share of the token's pace."""
        return self._total_rate / self._processes

    @property
    def processes(self) -> int:
        return self._processes

    @property
    def burst(self) -> float:
        return max(1.0, self._total_burst / self._processes)

    @property
    def waiting(self) -> int:
        return sum(1 for waiter in self._waiting if not waiter.granted.done())

    def take_if_free(self) -> bool:
        """Take one request if one may leave now and none waits; False (taking nothing) else.
        For what is worth sending only when it costs nobody a wait: the typing indicator."""
        self._refill()
        if self.waiting or self._tokens < 1:
            return False
        self._tokens -= 1
        self.granted += 1
        return True

    def share_with(self, processes: int) -> None:
        """The bot now runs `processes` live processes on this token: take an even share."""
        self._refill()
        self._processes = max(1, processes)
        self._tokens = min(self._tokens, self.burst)

    async def take(self, urgency: Urgency) -> None:
        """Return when one request of `urgency` may be sent now; it counts as sent.

        Intermediate requests (`Urgency.MORE`) wait while the token has a backlog, and for
        `BACKLOG_QUIET_S` after it: their answers' last texts follow soon and carry their text.
        """
        if (urgency < Urgency.MORE or not self._backlogged()) and self.take_if_free():
            return
        waiter = _Waiter(
            urgency, next(self._order), asyncio.get_running_loop().create_future(), self._clock()
        )
        heapq.heappush(self._waiting, waiter)
        self._grant()
        try:
            await waiter.granted
        except asyncio.CancelledError:
            if waiter.granted.done() and not waiter.granted.cancelled():
                self._tokens += 1  # granted as it was cancelled: the request was not sent
                self.granted -= 1
            else:
                waiter.granted.cancel()
            self._grant()
            raise

    def close(self) -> None:
        """Cancel the timer; waiters still waiting are woken by their own cancellation."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _backlogged(self) -> bool:
        return self._clock() < self._backlog_at + BACKLOG_QUIET_S

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._filled_at) * self.rate_per_s)
        self._filled_at = now

    def _grant(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._refill()
        while self._waiting:
            if self._waiting[0].granted.done():  # cancelled while waiting
                heapq.heappop(self._waiting)
                continue
            head = self._waiting[0]
            now = self._clock()
            if self._tokens < 1:
                delay = (1 - self._tokens) / self.rate_per_s
            elif head.urgency >= Urgency.MORE and self._backlogged():
                delay = self._backlog_at + BACKLOG_QUIET_S - now
            else:
                delay = 0.0
            if delay > 0:
                self._timer = asyncio.get_running_loop().call_later(delay, self._grant)
                return
            self._tokens -= 1
            self.granted += 1
            if now - head.since >= BACKLOG_WAIT_S and head.urgency < Urgency.REACTION:
                # A mark or a tidy-up waits behind everything by design: its wait says nothing
                # of the token's load, and counted, each would hold the next back a quiet
                # spell more.
                self._backlog_at = now
            heapq.heappop(self._waiting).granted.set_result(None)


@dataclass
class Slot:
    """One request's place in its key's bucket, for a `ChannelPace.slot` block."""

    used: bool = True

    def unused(self) -> None:
        """The block sent nothing after all: its end takes no room in the bucket."""
        self.used = False


class ChannelPace:
    """Each channel's writes within its bucket: at most `limit` per `window_s`, per key."""

    def __init__(
        self,
        limit: int = CHANNEL_WRITES,
        window_s: float = CHANNEL_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
        most_kept: int = 10_000,
    ) -> None:
        self._limit = limit
        self._window_s = window_s
        self._clock = clock
        self._most_kept = most_kept
        self._sent: dict[Hashable, deque[float]] = {}
        self._locks: dict[Hashable, asyncio.Lock] = {}

    @asynccontextmanager
    async def slot(self, key: Hashable, *, spaced: bool = False) -> AsyncIterator[Slot]:
        """Wait until `key`'s bucket has room for one more request, then hold the key while
        the caller waits for its turn in the token's budget; the request counts as sent when
        the block ends (so the window runs from when it really leaves), unless the block
        found it had nothing to send (`Slot.unused`).

        A `spaced` request also waits for the bucket's steady pace (one per `window_s /
        limit`) since the key's last one, and leaves the window's last room free: an answer's
        intermediate flushes and edits then gather what came meanwhile into one request, and
        the room stays for what a user waits on (a turn's first text, its last, a notice).
        """
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:  # one waiter per key at a time: the key's requests keep their order
            while True:
                wait = self._due(key, spaced=spaced) - self._clock()
                if wait <= 0:
                    break
                await asyncio.sleep(wait)
            held = Slot()
            yield held
            if held.used:
                self.took(key)

    def spare_in(self, key: Hashable) -> float:
        """How long until `key`'s bucket has room to spare (as for a `spaced` request) while
        none of its requests waits: 0 if now. For what must never take a text's place: a
        caller polls it, holding no place meanwhile, then says it `took` the room."""
        lock = self._locks.get(key)
        if lock is not None and lock.locked():
            return SPARE_POLL_S
        return max(0.0, self._due(key, spaced=True) - self._clock())

    def took(self, key: Hashable) -> None:
        """A request of `key` left now."""
        self._sent.setdefault(key, deque()).append(self._clock())
        self._forget_quiet()

    def _due(self, key: Hashable, *, spaced: bool) -> float:
        """When `key`'s next request may leave (see `slot`)."""
        sent = self._sent.setdefault(key, deque())
        now = self._clock()
        while sent and sent[0] <= now - self._window_s:
            sent.popleft()
        due = sent[0] + self._window_s if len(sent) >= self._limit else now
        if spaced and sent:
            due = max(due, sent[-1] + self._window_s / self._limit)
            if len(sent) >= self._limit - 1:  # the last room stays for the last text
                due = max(due, sent[1 - self._limit] + self._window_s)
        return due

    def back_off(self, key: Hashable, retry_after_s: float) -> None:
        """Discord refused `key` for `retry_after_s`: its bucket is full until then."""
        until = self._clock() + retry_after_s - self._window_s
        self._sent[key] = deque([until] * self._limit)

    def _forget_quiet(self) -> None:
        if len(self._sent) <= self._most_kept:
            return
        oldest = self._clock() - self._window_s
        for key in [k for k, sent in self._sent.items() if not sent or sent[-1] <= oldest]:
            self._sent.pop(key, None)
            lock = self._locks.get(key)
            if lock is not None and not lock.locked():
                del self._locks[key]


SHARE_REFRESH_S = 1.0
"""How often a process counts the bot's live processes: a process that starts or stops changes
every share within this (a crashed one counts until its heartbeat window ends: shares stay
smaller meanwhile, never larger)."""


async def keep_shared(budget: RequestBudget, live_processes: Callable[[], Awaitable[int]]) -> None:
    """Keep `budget` at this process's share of the token until cancelled.

    A failed count (the database is away) keeps the last share: the processes it counted are
    still the best guess, and a share is never taken from a count that failed. The failure is
    told once until a count works again, and not at all when the database's outage log has
    told it already: an outage would otherwise say it every second.
    """
    failing = False
    while True:
        try:
            budget.share_with(await live_processes())
            failing = False
        except Exception as error:
            if not failing and not reported(error):
                log.info(
                    "could not count the bot's processes (%r): keeping a share of 1/%d",
                    error,
                    budget.processes,
                )
            failing = True
        await asyncio.sleep(SHARE_REFRESH_S)
