"""A `ChannelPort` that keeps what it was sent, and fails when a test tells it to.

A test can also hold the channel "not writable" (Discord's limits would), so text accumulates
while the writer waits: `gate` closed holds every `writable` until it is set, and
`writable_turns` makes the n-th `writable` wait that many turns of the event loop (cycled), as
random delays do without slowing a property test down.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from tomori.delivery.port import Urgency


@dataclass
class PortCall:
    kind: str
    message_id: str
    content: str
    reply_to: str | None
    at: float
    urgency: Urgency


@dataclass
class RecordingPort:
    delay: float = 0.0
    failures: dict[int, BaseException] = field(default_factory=dict)
    """Call number (from 0) -> what that call raises."""
    gate: asyncio.Event | None = None
    """While not set, `writable` waits for it."""
    writable_turns: Sequence[int] = ()
    """Event-loop turns each `writable` waits, in order and cycled (empty: none)."""
    writable_calls: list[Urgency] = field(default_factory=list)
    """The urgency of each `writable` the writer awaited, in order."""
    messages: dict[str, str] = field(default_factory=dict)
    calls: list[PortCall] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))
    _attempts: int = 0

    async def writable(self, urgency: Urgency) -> None:
        turns = self.writable_turns
        wait = turns[len(self.writable_calls) % len(turns)] if turns else 0
        self.writable_calls.append(urgency)
        for _ in range(wait):
            await asyncio.sleep(0)
        if self.gate is not None:
            await self.gate.wait()

    async def send(self, content: str, *, reply_to: str | None, urgency: Urgency) -> str:
        self._maybe_fail()
        if self.delay:
            await asyncio.sleep(self.delay)
        message_id = str(next(self._ids))
        self.messages[message_id] = content
        self.calls.append(
            PortCall("send", message_id, content, reply_to, time.monotonic(), urgency)
        )
        return message_id

    async def edit(self, message_id: str, content: str, *, urgency: Urgency) -> None:
        self._maybe_fail()
        if self.delay:
            await asyncio.sleep(self.delay)
        self.messages[message_id] = content
        self.calls.append(PortCall("edit", message_id, content, None, time.monotonic(), urgency))

    def _maybe_fail(self) -> None:
        attempt = self._attempts
        self._attempts += 1
        if attempt in self.failures:
            raise self.failures[attempt]

    @property
    def channel_text(self) -> list[str]:
        return list(self.messages.values())
