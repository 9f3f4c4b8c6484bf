"""The stream writer that puts a pass's text into a Discord channel, in either delivery mode.

It talks to a `ChannelPort` (send, edit), which the cog implements over nextcord or
discord.py; nothing here knows either library. Sending happens in the writer's own task, so the
generation can be cancelled at once while a send already on the wire completes and is counted.

- `messages` mode (the default, as TomoriBot): discrete messages released at safe boundaries
  by the `Segmenter`, never edited.
- `edit` mode: one message grows by edits, at most one per `STREAM_EDIT_INTERVAL_MS`, and goes
  on in a new message past 1950 characters. A shown message only ever grows: the cut that ends
  it falls after the text already shown, never inside it.

One answer fills at most `max_messages` messages, counted over the turn. The last one is filled
up to the limit (in messages mode it is held until full or the answer ends); when more would
follow, it ends with `CUT_NOTE` and `feed` raises `AnswerCut`, so the pass stops reading.

Every successful send or edit is recorded in the turn's delivered list before it returns and is
reported as progress, which re-arms the pass's idle timer. A rate limit is waited out; a channel
that is gone or forbidden ends delivery (`DestinationUnreachable`); any other failure of one
message is logged and the rest still goes out.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import replace
from typing import Protocol

from tomori.config.settings import Delivery
from tomori.delivery.ceiling import CUT_NOTE, with_cut_note
from tomori.delivery.chunking import MESSAGE_LIMIT, Splitter, stable_end
from tomori.delivery.fences import fence_line, unclosed_fence
from tomori.delivery.port import (
    AnswerCut,
    AnswerRecord,
    ChannelPort,
    DeliveredMessage,
    DeliveryFailed,
    DeliveryRateLimited,
    DestinationUnreachable,
)
from tomori.delivery.segmenter import Segmenter

log = logging.getLogger(__name__)

MAX_RATE_LIMIT_WAITS = 5


class ChannelWriter:
    """A `StreamWriter` for one pass into one channel."""

    def __init__(
        self,
        port: ChannelPort,
        answer: AnswerRecord,
        *,
        delivery: Delivery = Delivery.MESSAGES,
        edit_interval_s: float = 1.0,
        max_messages: int = 10,
    ) -> None:
        self._port = port
        self._answer = answer
        self._delivery = delivery
        self._edit_interval_s = edit_interval_s
        self._segmenter = Segmenter()
        self._pending: deque[str] = deque()
        self._sender: asyncio.Task[None] | None = None
        self._delivered: list[str] = []
        self._failure: DestinationUnreachable | None = None
        # edit mode: the message being grown, its text, and its place in answer.delivered
        self._growing_id: str | None = None
        self._growing_text = ""
        self._growing_index = -1
        self._last_edit_at = 0.0
        # the ceiling: messages this writer may still start, the held last one, and the cut
        self._room = max_messages - len(answer.delivered)
        self._last = ""
        self._cut = False
        self._noted = False
        """`cut` was called: `finish` ends the answer with `CUT_NOTE`."""
        self._started = False
        """Visible text came: from then on `_room` counts this pass's own messages down."""
        # edit mode: the tail held back until it cannot become part of a protected span
        self._tail = ""
        self._final = False

    # -- StreamWriter -------------------------------------------------------------------------

    def feed(self, text: str) -> None:
        if self._failure is not None:
            raise self._failure
        if not self._started and text.strip():
            self._started = True
            self._cut = self._room <= 0  # an earlier pass of the turn filled the ceiling
        if self._cut:
            raise AnswerCut
        if self._delivery is Delivery.EDIT:
            self._pending.append(text)
            self._ensure_sender()
            return
        self._segmenter.wanted = self._room + 1  # the messages left, and one to see more follows
        self._queue(self._segmenter.feed(text))
        if self._cut:
            raise AnswerCut

    def cut(self) -> None:
        self._noted = not self._cut  # (a cut at the ceiling has its note already)

    async def finish(self) -> None:
        self._final = True
        if self._tail:
            self._ensure_sender()
        if self._delivery is Delivery.MESSAGES and not self._cut:
            self._queue(self._segmenter.finish())
            if self._last:
                self._pending.append(self._last)
                self._last = ""
            if self._noted:
                self._note_last_segment()
        if self._pending:
            self._ensure_sender()
        await self._wait_sender()
        if self._failure is not None:
            raise self._failure
        await self._close_growing_code()
        if self._noted and self._delivery is Delivery.EDIT and self._growing_id is not None:
            noted = with_cut_note(self._growing_text, shown=len(self._growing_text))
            if noted != self._growing_text and await self._call(self._edit, noted) is not None:
                self._growing_text = noted
                self._record_growth()

    def _note_last_segment(self) -> None:
        """Messages mode, `cut`: the note ends the last message, or follows it if it is sent."""
        for index in range(len(self._pending) - 1, -1, -1):
            if self._pending[index].strip():
                self._pending[index] = with_cut_note(self._pending[index])
                return
        if self._started and self._room > 0:
            self._pending.append(CUT_NOTE.lstrip())

    async def _close_growing_code(self) -> None:
        """Edit mode: a code block the answer left open is closed, as messages mode does."""
        if self._delivery is not Delivery.EDIT or self._growing_id is None:
            return
        fence = unclosed_fence(self._growing_text)
        if fence is None or fence_line(self._growing_text.rsplit("\n", 1)[-1]) is not None:
            return  # nothing open, or the answer ended on its opening fence: shown as written
        separator = "" if self._growing_text.endswith("\n") else "\n"
        closed = self._growing_text + separator + fence.closing
        if await self._call(self._edit, closed) is not None:
            self._growing_text = closed
            self._record_growth()

    def _queue(self, segments: list[str]) -> None:
        """Queue messages-mode segments; the last message the ceiling allows is held to fill."""
        for segment in segments:
            if self._cut:
                return
            if not segment.strip() and not self._last:
                self._pending.append(segment)
            elif self._room > 1:
                self._pending.append(segment)
                self._room -= 1
            elif len(self._last) + len(segment) <= MESSAGE_LIMIT:
                self._last += segment
            else:
                self._pending.append(with_cut_note(self._last + segment))
                self._last, self._cut, self._room = "", True, 0
                self._segmenter.drop()
        if self._pending:
            self._ensure_sender()

    async def settle(self) -> None:
        if self._delivery is Delivery.EDIT:
            held = self._tail + "".join(self._pending)
            self._pending.clear()
            self._tail = held[: held.rfind("\n") + 1]
        else:
            self._segmenter.keep_lines()
        await self.finish()

    def abandon(self) -> None:
        self._segmenter.drop()
        self._pending.clear()
        self._last = self._tail = ""

    @property
    def delivered_text(self) -> str:
        return "".join(self._delivered) + self._growing_text

    @property
    def sprites(self) -> tuple[str, ...]:
        return ()

    async def aclose(self) -> None:
        """Stop sending: what is not on the wire is dropped, what is may finish."""
        self.abandon()
        await self._wait_sender()

    # -- sending ------------------------------------------------------------------------------

    def _ensure_sender(self) -> None:
        if self._sender is None or self._sender.done():
            deliver = self._grow if self._delivery is Delivery.EDIT else self._send_segments
            self._sender = asyncio.create_task(
                deliver(), name=f"tomori-send-{self._answer.channel_id}"
            )

    async def _wait_sender(self) -> None:
        if self._sender is not None:
            await asyncio.gather(self._sender, return_exceptions=True)

    async def _send_segments(self) -> None:
        while self._pending and self._failure is None:
            segment = self._pending.popleft()
            if not segment.strip():
                self._delivered.append(segment)
                continue
            message_id = await self._call(self._send, segment)
            if message_id is not None:
                self._delivered.append(segment)

    async def _grow(self) -> None:
        while (self._pending or (self._final and self._tail)) and self._failure is None:
            wait = self._last_edit_at + self._edit_interval_s - time.monotonic()
            if self._growing_id is not None and wait > 0:
                await asyncio.sleep(wait)
            text = self._growing_text + self._tail + "".join(self._pending)
            self._pending.clear()
            shown = len(self._growing_text)
            keep = len(text) if self._final else stable_end(text, shown)
            self._tail = text[keep:]
            if keep > shown:
                await self._extend_growing(text[shown:keep])
            if self._cut:
                self._tail = ""

    async def _extend_growing(self, addition: str) -> None:
        """Grow the current message by `addition`, going on in new ones as each fills up.

        The cut that ends the current message falls after what it already shows, so no text
        ever moves out of a message the user is reading.
        """
        shown = len(self._growing_text) if self._growing_id is not None else 0
        # cut no more than the ceiling lets out (the current message, the new ones, and one
        # to see that more follows: the rest, past the ceiling, is never cut)
        most = self._room + 3
        pieces = Splitter(self._growing_text + addition).pieces(floor=shown, most=most)
        for index, piece in enumerate(pieces):
            if index > 0:  # the message before this piece is full: it is final now
                self._delivered.append(self._growing_text)
                self._growing_id, self._growing_text = None, ""
            if self._growing_id is None:
                if not piece.strip():  # nothing visible yet: send it with what follows
                    self._growing_text = piece
                    continue
                if self._room <= 1 and index + 1 < len(pieces):  # the ceiling: end here
                    piece = with_cut_note(piece)
                    self._cut = True
                message_id = await self._call(self._send, piece)
                if message_id is None:
                    return
                self._room -= 1
                self._growing_id, self._growing_text = message_id, piece
                self._growing_index = len(self._answer.delivered) - 1
            else:
                if self._room <= 0 and index + 1 < len(pieces):
                    piece = with_cut_note(piece, shown=len(self._growing_text))
                    self._cut = True
                if piece != self._growing_text:
                    if await self._call(self._edit, piece) is None:
                        return
                    self._growing_text = piece
                    self._record_growth()
            if self._cut:
                self._pending.clear()
                return

    def _record_growth(self) -> None:
        entry = self._answer.delivered[self._growing_index]
        self._answer.delivered[self._growing_index] = replace(entry, text=self._growing_text)

    async def _send(self, content: str) -> str:
        reply_to = self._answer.reply_to if not self._answer.delivered else None
        message_id = await self._port.send(content, reply_to=reply_to)
        self._answer.delivered.append(DeliveredMessage(message_id, content))
        self._last_edit_at = time.monotonic()
        self._answer.report_progress()
        return message_id

    async def _edit(self, content: str) -> str:
        assert self._growing_id is not None
        await self._port.edit(self._growing_id, content)
        self._last_edit_at = time.monotonic()
        self._answer.report_progress()
        return self._growing_id

    async def _call(self, operation: _Operation, content: str) -> str | None:
        """Run one send or edit; wait out rate limits; None if it did not land."""
        for _ in range(MAX_RATE_LIMIT_WAITS):
            try:
                return await operation(content)
            except DeliveryRateLimited as limited:
                log.info(
                    "channel %s rate limited; waiting %.2fs",
                    self._answer.channel_id,
                    limited.retry_after_s,
                )
                await asyncio.sleep(limited.retry_after_s)
            except DestinationUnreachable as gone:
                log.warning("channel %s is unreachable: %s", self._answer.channel_id, gone)
                self._failure = gone
                self._pending.clear()
                self._segmenter.drop()
                return None
            except DeliveryFailed as failed:
                log.warning(
                    "a message to channel %s was not delivered: %s", self._answer.channel_id, failed
                )
                return None
            except Exception as error:  # the send loop must go on, and never die unobserved
                log.warning(
                    "a message to channel %s was not delivered: %r", self._answer.channel_id, error
                )
                return None
        log.warning(
            "gave up on a message to channel %s after %d rate limits",
            self._answer.channel_id,
            MAX_RATE_LIMIT_WAITS,
        )
        return None


class _Operation(Protocol):
    async def __call__(self, content: str) -> str: ...
