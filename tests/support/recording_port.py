"""A `ChannelPort` that keeps what it was sent, and fails when a test tells it to."""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field


@dataclass
class PortCall:
    kind: str
    message_id: str
    content: str
    reply_to: str | None
    at: float


@dataclass
class RecordingPort:
    delay: float = 0.0
    failures: dict[int, BaseException] = field(default_factory=dict)
    """Call number (from 0) -> what that call raises."""
    messages: dict[str, str] = field(default_factory=dict)
    calls: list[PortCall] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))
    _attempts: int = 0

    async def send(self, content: str, *, reply_to: str | None) -> str:
        self._maybe_fail()
        if self.delay:
            await asyncio.sleep(self.delay)
        message_id = str(next(self._ids))
        self.messages[message_id] = content
        self.calls.append(PortCall("send", message_id, content, reply_to, time.monotonic()))
        return message_id

    async def edit(self, message_id: str, content: str) -> None:
        self._maybe_fail()
        if self.delay:
            await asyncio.sleep(self.delay)
        self.messages[message_id] = content
        self.calls.append(PortCall("edit", message_id, content, None, time.monotonic()))

    def _maybe_fail(self) -> None:
        attempt = self._attempts
        self._attempts += 1
        if attempt in self.failures:
            raise self.failures[attempt]

    @property
    def channel_text(self) -> list[str]:
        return list(self.messages.values())
