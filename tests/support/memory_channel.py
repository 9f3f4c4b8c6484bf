"""An in-memory channel and stream writer implementing the core's delivery protocols.

The writer sends at line boundaries from a task of its own, like the Discord writer will, so a
test can hold a send "on the wire" (`send_delay`) while the pass that fed it is killed.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from dataclasses import dataclass, field

from tomori.delivery.notices import Notice
from tomori.delivery.port import DeliveredMessage
from tomori.generation.state import TurnState


@dataclass
class MemoryChannel:
    send_delay: float = 0.0
    messages: list[str] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    sends_started: int = 0
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def send(self, text: str) -> str:
        self.sends_started += 1
        if self.send_delay:
            await asyncio.sleep(self.send_delay)
        self.messages.append(text)
        return str(next(self._ids))

    async def post_notice(self, notice: Notice) -> None:
        self.notices.append(notice)


class MemoryStreamWriter:
    """Sends each completed line as a message; the rest at `finish`."""

    def __init__(self, channel: MemoryChannel, state: TurnState) -> None:
        self._channel = channel
        self._ctx = state
        self._buffer: list[str] = []
        self._pending: deque[str] = deque()
        self._sender: asyncio.Task[None] | None = None
        self._delivered: list[str] = []

    def feed(self, text: str) -> None:
        cut = text.rfind("\n")
        if cut < 0:
            self._buffer.append(text)
            return
        self._buffer.append(text[: cut + 1])
        self._pending.append("".join(self._buffer))
        self._buffer = [text[cut + 1 :]] if cut + 1 < len(text) else []
        self._ensure_sender()

    def cut(self) -> None:
        self._buffer.append("\n(cut)")

    async def finish(self) -> None:
        if self._buffer:
            self._pending.append("".join(self._buffer))
            self._buffer = []
            self._ensure_sender()
        await self._wait_sender()

    async def settle(self) -> None:
        self._buffer = []  # the unfinished line; complete lines are sent
        await self._wait_sender()

    def abandon(self) -> None:
        self._buffer = []
        self._pending.clear()

    async def aclose(self) -> None:
        """End the writer's own task (the turn's job once its passes are done)."""
        self.abandon()
        if self._sender is not None:
            self._sender.cancel()
        await self._wait_sender()

    @property
    def delivered_text(self) -> str:
        return "".join(self._delivered)

    @property
    def sprites(self) -> tuple[str, ...]:
        return ()

    @property
    def sending(self) -> bool:
        return self._sender is not None and not self._sender.done()

    def _ensure_sender(self) -> None:
        if not self.sending:
            self._sender = asyncio.create_task(self._send_pending())

    async def _wait_sender(self) -> None:
        if self._sender is not None:
            await asyncio.gather(self._sender, return_exceptions=True)

    async def _send_pending(self) -> None:
        while self._pending:
            segment = self._pending.popleft()
            message_id = await self._channel.send(segment)
            self._delivered.append(segment)
            self._ctx.delivered.append(DeliveredMessage(message_id, segment))
            self._ctx.report_progress()
