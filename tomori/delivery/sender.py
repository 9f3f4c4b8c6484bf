"""The requests one pass makes to its channel, whichever delivery mode writes them.

Both writers (`writer.py`) compose their text only once `ChannelPort.writable` returned, so
whatever came meanwhile goes out in that one request, and every send and edit lands here: it
is recorded in the turn's delivered list before it returns and reported as progress (which
re-arms the pass's idle timer), a rate limit is waited out, a channel that is gone or forbidden
ends delivery (`DestinationUnreachable`), and any other failure loses that one request. The
sender also owns the task the writer sends in, so the generation can be cancelled at once while
a request already on the wire completes and is counted; `stop` drops at once what is not on the
wire (a request waiting for the channel's turn, or for more text), so a /kill frees the channel
in milliseconds rather than after the channel's next slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Protocol

from tomori.delivery.port import (
    AnswerRecord,
    ChannelPort,
    DeliveredMessage,
    DeliveryFailed,
    DeliveryRateLimited,
    DestinationUnreachable,
    Urgency,
)
from tomori.delivery.sprite_markers import Wardrobe

log = logging.getLogger(__name__)

MAX_RATE_LIMIT_WAITS = 5


class Sender:
    """One pass's requests to one channel (see the module docstring)."""

    def __init__(
        self,
        port: ChannelPort,
        answer: AnswerRecord,
        *,
        gather_first_s: float | None,
        wardrobe: Wardrobe | None,
        unreachable: Callable[[], None],
    ) -> None:
        """`gather_first_s`: how long the turn's first message waits for more of the answer
        (None: not at all); `unreachable` drops what the writer holds once the channel is gone."""
        self._port = port
        self.answer = answer
        self._gather_first_s = gather_first_s
        self._wardrobe = wardrobe
        self._unreachable = unreachable
        self._wearing: str | None = None
        """The sprite the port wears for the messages sent now."""
        self.sprites: list[str] = []
        """The sprite of each message sent wearing one, in order."""
        self.failure: DestinationUnreachable | None = None
        self.ended = asyncio.Event()
        """The answer is whole (`finish`): a request waiting as intermediate is its last."""
        self.last_write_at = 0.0
        self._reserved = False
        """A `writable` returned that no send or edit has used yet."""
        self._task: asyncio.Task[None] | None = None
        self._on_wire = False
        """A send or edit is with the port: it must land (and be counted), never be cut."""
        self._stopped = False

    def start(self, deliver: Callable[[], Awaitable[None]]) -> None:
        """Run `deliver` in the sender's task, unless it runs already (or the sender stopped)."""
        if self._stopped:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(
                _run(deliver), name=f"tomori-send-{self.answer.channel_id}"
            )

    async def wait(self) -> None:
        """Until the task sent all it had (or failed, or was stopped)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def stop(self) -> None:
        """Send nothing more: the task ends now unless a request is on the wire, which lands
        (and is counted) first."""
        self._stopped = True
        if self._task is not None and not self._on_wire:
            self._task.cancel()

    def urgency(self) -> Urgency:
        """How soon the next request matters: the turn's first text, its last, or text between."""
        if not self.answer.delivered:
            return Urgency.FIRST
        return Urgency.LAST if self.ended.is_set() else Urgency.MORE

    async def writable(self) -> None:
        """Wait until the channel may be written to; what is composed after goes out at once."""
        await self.guarded(self._reserve)

    def wear(self, label: str | None) -> None:
        """The messages sent from now on wear this sprite."""
        if self._wardrobe is not None:
            self._wearing = label
            self._wardrobe.wear(label)

    async def send(self, content: str) -> str | None:
        """A new message; its ID, or None if it did not land (a part of the answer lost,
        unless the pass was stopped: `AnswerRecord.lost_a_part`)."""
        message_id = await self._call(self._send, content)
        if message_id is None and not self._stopped:
            self.answer.lost_a_part()
        return message_id

    async def edit(self, message_id: str, content: str) -> bool:
        """A message sent before, now `content`; whether the edit landed."""

        async def edit(content: str, urgency: Urgency) -> str:
            self._reserved = False
            with self._wire():
                await self._port.edit(message_id, content, urgency=urgency)
            self.last_write_at = time.monotonic()
            self.answer.report_progress()
            return message_id

        return await self._call(edit, content) is not None

    async def _reserve(self) -> bool:
        if self._reserved:
            return True
        urgency = self.urgency()
        if urgency is Urgency.FIRST and self._gather_first_s is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.ended.wait(), self._gather_first_s)
        if urgency is Urgency.MORE and not self.ended.is_set():
            # an intermediate request waits at the channel's steady pace; if the answer ends
            # meanwhile, it is the last, which a user waits on: it asks again as that
            waiting = asyncio.ensure_future(self._port.writable(urgency))
            ended = asyncio.ensure_future(self.ended.wait())
            try:
                await asyncio.wait({waiting, ended}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for future in (waiting, ended):
                    future.cancel()
                await asyncio.gather(waiting, ended, return_exceptions=True)
            if not waiting.cancelled():
                waiting.result()  # the port's failure, if it failed
                self._reserved = True
                return True
            urgency = self.urgency()
        await self._port.writable(urgency)
        self._reserved = True
        return True

    async def _send(self, content: str, urgency: Urgency) -> str:
        reply_to = self.answer.reply_to if not self.answer.delivered else None
        self._reserved = False
        with self._wire():
            message_id = await self._port.send(content, reply_to=reply_to, urgency=urgency)
        self.answer.delivered.append(DeliveredMessage(message_id, content))
        if self._wearing is not None and self._wardrobe is not None:
            self.sprites.append(self._wardrobe.shown(self._wearing))
        self.last_write_at = time.monotonic()
        self.answer.report_progress()
        return message_id

    async def _call(self, operation: _Operation, content: str) -> str | None:
        """Run one send or edit once the channel is writable; None if it did not land."""

        async def request() -> str:
            urgency = self.urgency()
            await self._reserve()
            return await operation(content, urgency)

        return await self.guarded(request)

    async def guarded[T](self, step: Callable[[], Awaitable[T]]) -> T | None:
        """Run one step of delivery; wait out rate limits; None if it failed.

        A channel that is gone ends delivery; any other failure loses this step only."""
        channel_id = self.answer.channel_id
        for _ in range(MAX_RATE_LIMIT_WAITS):
            if self._stopped:
                return None
            try:
                return await step()
            except DeliveryRateLimited as limited:
                log.info(
                    "channel %s rate limited; waiting %.2fs", channel_id, limited.retry_after_s
                )
                await asyncio.sleep(limited.retry_after_s)
            except DestinationUnreachable as gone:
                log.warning("channel %s is unreachable: %s", channel_id, gone)
                self.failure = gone
                self._unreachable()
                return None
            except DeliveryFailed as failed:
                log.warning("a message to channel %s was not delivered: %s", channel_id, failed)
                return None
            except Exception as error:  # the send loop must go on, and never die unobserved
                log.warning("a message to channel %s was not delivered: %r", channel_id, error)
                return None
        log.warning(
            "gave up on a message to channel %s after %d rate limits",
            channel_id,
            MAX_RATE_LIMIT_WAITS,
        )
        return None

    @contextlib.contextmanager
    def _wire(self) -> Iterator[None]:
        """A request with the port: `stop` lets it land."""
        self._on_wire = True
        try:
            yield
        finally:
            self._on_wire = False


async def _run(deliver: Callable[[], Awaitable[None]]) -> None:
    await deliver()


class _Operation(Protocol):
    async def __call__(self, content: str, urgency: Urgency) -> str: ...
