"""A turn runner for lock tests: records each turn and holds it until the test lets it go."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable

from tomori.locks import Turn, TurnGuard

TurnBody = Callable[[Turn, TurnGuard], Awaitable[None]]


class HeldTurns:
    def __init__(self, body: TurnBody | None = None) -> None:
        self.started: list[Turn] = []
        self.finished: list[str] = []
        self.cancelled: list[str] = []
        self._gates: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self._arrivals: asyncio.Queue[Turn] = asyncio.Queue()
        self._body = body

    async def __call__(self, turn: Turn, guard: TurnGuard) -> None:
        message_id = turn.trigger.message_id or ""
        self.started.append(turn)
        await self._arrivals.put(turn)
        try:
            if self._body is not None:
                await self._body(turn, guard)
            await self._gates[message_id].wait()
        except asyncio.CancelledError:
            self.cancelled.append(message_id)
            raise
        self.finished.append(message_id)

    def let_finish(self, message_id: str) -> None:
        self._gates[message_id].set()

    async def next_started(self, within: float = 5.0) -> Turn:
        return await asyncio.wait_for(self._arrivals.get(), within)

    @property
    def started_ids(self) -> list[str | None]:
        return [turn.trigger.message_id for turn in self.started]


async def streaming(turn: Turn, guard: TurnGuard) -> None:
    """A turn that streams until it is stopped: progress on its lock every 50 ms."""
    while True:
        guard.touch()
        await asyncio.sleep(0.05)
