"""What ends a pass, or its waits, from outside: its kill switch, its rolling timer, and the
bound on delivering what the provider wrote once its stream has ended.

All belong to `stream_once`, the one place that keeps a pass's time; they live here only to
keep that module short. The timer is a deadline, not a timer object per chunk: progress moves
the deadline forward and the single pending timer, when it fires early, re-arms itself for the
new deadline. That keeps the per-chunk cost to a clock read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from time import monotonic
from typing import Any

from tomori.delivery.port import StreamWriter
from tomori.generation.results import StreamResult
from tomori.locks.vocabulary import KillReason


class KillSwitch:
    """The pass's kill callback: records why (the first reason), cancels the generation, wakes
    the waiter.

    The waiter waits on a bare future, not on an `Event` through a task of its own: under load
    every loop iteration between the kill and the waiter resuming is milliseconds of lateness
    for the timeout notice and for the channel coming free.
    """

    def __init__(self) -> None:
        self.reason: KillReason | None = None
        """What killed the pass first: the timer, /kill or a stale release."""
        self.generation: asyncio.Task[StreamResult] | None = None
        self.fired: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def __call__(self, reason: KillReason) -> None:
        if self.reason is None:
            self.reason = reason
        if self.generation is not None:
            self.generation.cancel()
        if not self.fired.done():
            self.fired.set_result(None)

    def rearm(self) -> None:
        """Let a further kill (a /kill) be heard after this one."""
        self.fired = asyncio.get_running_loop().create_future()


class RollingTimer:
    """Calls `expire` once no progress was seen for the current budget.

    The first check is due after the shorter of the two budgets, so the one pending handle is
    never late for a deadline that the first chunk pulled earlier; from then on every check
    re-arms for the deadline as it stands, which progress only moves later. Deadlines are on
    `time.monotonic`, read directly: `progress` runs once per chunk.
    """

    def __init__(
        self, first_budget_s: float, idle_budget_s: float, expire: Callable[[], None]
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._idle_s = idle_budget_s
        self._expire = expire
        self.saw_progress = False
        self._deadline = monotonic() + first_budget_s
        first_check = min(first_budget_s, idle_budget_s)
        self._handle: asyncio.TimerHandle | None = self._loop.call_later(first_check, self._check)

    def progress(self) -> None:
        self._deadline = monotonic() + self._idle_s
        self.saw_progress = True

    def _check(self) -> None:
        remaining = self._deadline - monotonic()
        if remaining <= 0:
            self._handle = None
            self._expire()
        else:
            self._handle = self._loop.call_later(remaining, self._check)

    def deliver(self, budget_s: float, expire: Callable[[], None]) -> None:
        """The provider is done: from now on the budget bounds delivery and `expire` ends it.

        A send still waiting (out a 429, on a slow network) is not provider idleness, so the
        idle budget stops here; sends that land re-arm the new budget as they did the old.
        """
        self.cancel()
        self._idle_s, self._expire = budget_s, expire
        self._deadline = monotonic() + budget_s
        self._handle = self._loop.call_later(budget_s, self._check)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class BoundedDelivery:
    """The writer as the generation task sees it: `finish` runs under a bound of its own.

    `finish` (or `settle`, for a stream that failed) is called once the provider's stream has
    ended, when only delivery remains. Its wait runs in a task handed to `bound`, which may
    cancel it: that ends the wait without ending the pass, which keeps the provider's outcome
    with the text that landed. A kill cancels the generation task, and this wait with it, as
    before. Everything else goes straight to the writer.
    """

    def __init__(self, writer: StreamWriter, bound: Callable[[asyncio.Task[None]], None]) -> None:
        self._writer = writer
        self._bound = bound

    def feed(self, text: str) -> None:
        self._writer.feed(text)

    def cut(self) -> None:
        self._writer.cut()

    async def finish(self) -> None:
        await self._bounded(self._writer.finish())

    async def settle(self) -> None:
        await self._bounded(self._writer.settle())

    async def _bounded(self, delivering: Coroutine[Any, Any, None]) -> None:
        finishing = asyncio.create_task(delivering, name="tomori-generation-delivery")
        self._bound(finishing)
        try:
            await finishing
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not finishing.cancelled() or (current is not None and current.cancelling()):
                raise

    def abandon(self) -> None:
        self._writer.abandon()

    @property
    def delivered_text(self) -> str:
        return self._writer.delivered_text

    @property
    def sprites(self) -> tuple[str, ...]:
        return self._writer.sprites

    async def aclose(self) -> None:
        await self._writer.aclose()
