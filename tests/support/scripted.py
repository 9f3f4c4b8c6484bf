"""A provider that plays a scripted sequence of events with scripted delays."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

from tomori.providers.base import ProviderEvent, StreamRequest, TextDelta


@dataclass(frozen=True)
class Step:
    """Wait `delay` seconds, then yield `event` or raise `error`."""

    delay: float = 0.0
    event: ProviderEvent | None = None
    error: BaseException | None = None


def text(chunk: str, after: float = 0.0) -> Step:
    return Step(after, TextDelta(chunk))


def stall(seconds: float) -> Step:
    return Step(seconds)


class ScriptedProvider:
    """Plays its steps for each request; records how each stream ended."""

    def __init__(self, steps: Sequence[Step], name: str = "scripted") -> None:
        self._steps = list(steps)
        self._name = name
        self.requests: list[StreamRequest] = []
        self.closed = 0
        self.finished = 0

    @property
    def name(self) -> str:
        return self._name

    async def aclose(self) -> None:
        pass

    async def stream(self, request: StreamRequest) -> AsyncGenerator[ProviderEvent, None]:
        self.requests.append(request)
        try:
            for step in self._steps:
                if step.delay:
                    await asyncio.sleep(step.delay)
                if step.error is not None:
                    raise step.error
                if step.event is not None:
                    yield step.event
            self.finished += 1
        finally:
            self.closed += 1
