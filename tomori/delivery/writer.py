"""The stream writer that puts a pass's text into a Discord channel, in either delivery mode.

It talks to a `ChannelPort` (writable, send, edit), which the cog implements over nextcord or
discord.py; nothing here knows either library. Sending happens in the writer's own task, so the
generation can be cancelled at once while a send already on the wire completes and is counted.

Before each request the writer awaits `ChannelPort.writable` and only then composes the text,
so whatever came while the channel could not be written to goes out in that one request:

- `messages` mode (the default, as TomoriBot): the `Segmenter` releases text at safe
  boundaries, and each send carries every released segment that fits one message together
  (never over 2000 characters): a short answer is one message, a burst of paragraphs is not ten.
  The turn's first message gathers for `FIRST_GATHER_S` unless the answer ends sooner (the
  last paragraph is released only then, so an answer given at once would otherwise be two
  messages); the ones after wait at the channel's steady pace, gathering what came meanwhile.
  A message is never edited.
- `edit` mode: one message grows by edits, at most one per `STREAM_EDIT_INTERVAL_MS` and one
  per time the channel may be written to (under load the interval stretches by itself), the
  edit that ends the answer at once, and goes on in a new message past 1950 characters. A
  shown message only ever grows: the cut that ends it falls after the text already shown,
  never inside it.

A persona with sprites gives the writer its `Wardrobe`: each sprite marker
(`tomori.delivery.sprite_markers`) is taken out of the text, ends the message before it (the
segments before it are released, or the growing message is final), and what follows goes out in
new messages once the port is told to wear that sprite. Every other rule holds across markers.

One answer shows at most `max_answer_chars` characters, counted over the turn (see `ceiling`);
when more would follow, the text is cut where nothing breaks and the last message ends with
`CUT_NOTE`, and `feed` raises `AnswerCut`, so the pass stops reading.

Every successful send or edit is recorded in the turn's delivered list before it returns and is
reported as progress, which re-arms the pass's idle timer. A rate limit is waited out; a channel
that is gone or forbidden ends delivery (`DestinationUnreachable`); any other failure of one
message is logged and the rest still goes out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Protocol

from tomori.config.settings import DEFAULT_MAX_ANSWER_CHARS, Delivery
from tomori.delivery.ceiling import CUT_NOTE, cut_to, with_cut_note
from tomori.delivery.chunking import HARD_LIMIT, MESSAGE_LIMIT, Splitter, stable_end
from tomori.delivery.fences import fence_line, unclosed_fence
from tomori.delivery.port import (
    AnswerCut,
    AnswerRecord,
    ChannelPort,
    DeliveredMessage,
    DeliveryFailed,
    DeliveryRateLimited,
    DestinationUnreachable,
    Urgency,
)
from tomori.delivery.segmenter import Segmenter
from tomori.delivery.sprite_markers import SpriteSwitch, Wardrobe

log = logging.getLogger(__name__)

FIRST_GATHER_S = 0.25
"""Messages mode: how long the turn's first message waits for more of the answer (all of it,
if the model gives it at once), a quarter second a reader does not notice."""
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
        max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
        first_gather_s: float = FIRST_GATHER_S,
        wardrobe: Wardrobe | None = None,
    ) -> None:
        self._port = port
        self._answer = answer
        self._delivery = delivery
        self._edit_interval_s = edit_interval_s
        self._first_gather_s = first_gather_s
        self._segmenter = Segmenter()
        self._pending: deque[str | SpriteSwitch] = deque()
        """Messages mode: segments; edit mode: text as fed; both: the sprite switches between."""
        self._wardrobe = wardrobe
        self._markers = wardrobe.markers() if wardrobe is not None else None
        self._wearing: str | None = None
        """The sprite the port wears for the messages sent now."""
        self._sprites: list[str] = []
        """The sprite of each message sent wearing one, in order."""
        self._sender: asyncio.Task[None] | None = None
        self._delivered: list[str] = []
        self._failure: DestinationUnreachable | None = None
        self._reserved = False
        """A `writable` returned that no send or edit has used yet."""
        # edit mode: the message being grown, its text, and its place in answer.delivered
        self._growing_id: str | None = None
        self._growing_text = ""
        self._growing_index = -1
        self._last_edit_at = 0.0
        # the ceiling: the characters this pass may show (earlier passes of the turn showed
        # the rest), those messages mode has queued, and the cut
        self._limit = max_answer_chars - sum(len(shown.text) for shown in answer.delivered)
        self._queued = 0
        self._cut = False
        self._noted = False
        """`cut` was called: `finish` ends the answer with `CUT_NOTE`."""
        self._started = False
        """Visible text came: an answer whose earlier passes filled the ceiling is cut now."""
        # edit mode: the tail held back until it cannot become part of a protected span
        self._tail = ""
        self._final = False
        self._ended = asyncio.Event()
        """`finish` was called: a request waiting as intermediate is now the answer's last."""

    # -- StreamWriter -------------------------------------------------------------------------

    def feed(self, text: str) -> None:
        if self._markers is None:
            self._feed_text(text)
            return
        for piece in self._markers.feed(text):
            if isinstance(piece, SpriteSwitch):
                self._switch(piece)
            else:
                self._feed_text(piece)

    def _switch(self, switch: SpriteSwitch) -> None:
        """A sprite marker: the text before it ends its message, the text after it wears the
        sprite in new messages."""
        if self._failure is not None:
            raise self._failure
        if self._cut:
            raise AnswerCut
        if self._delivery is Delivery.MESSAGES:
            self._queue(self._segmenter.finish())
        self._pending.append(switch)
        self._ensure_sender()

    def _feed_text(self, text: str) -> None:
        if self._failure is not None:
            raise self._failure
        if not self._started and text.strip():
            self._started = True
            self._cut = self._limit <= 0  # an earlier pass of the turn filled the ceiling
        if self._cut:
            raise AnswerCut
        if self._delivery is Delivery.EDIT:
            self._pending.append(text)
            self._ensure_sender()
            return
        # each segment holds a character at least: no more can fit, and one shows more follows
        self._segmenter.wanted = max(0, self._limit - self._queued) + 1
        self._queue(self._segmenter.feed(text))
        if self._cut:
            raise AnswerCut

    def cut(self) -> None:
        self._noted = not self._cut  # (a cut at the ceiling has its note already)

    async def finish(self) -> None:
        if self._markers is not None:
            with contextlib.suppress(AnswerCut, DestinationUnreachable):
                for piece in self._markers.finish():  # a line that may have been a marker
                    if isinstance(piece, SpriteSwitch):
                        self._switch(piece)
                    else:
                        self._feed_text(piece)
        self._final = True
        self._ended.set()
        if self._tail:
            self._ensure_sender()
        if self._delivery is Delivery.MESSAGES and not self._cut:
            self._queue(self._segmenter.finish())
            if self._noted and not self._cut:
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
        """Messages mode: the note ends the last message, or follows it if it is sent."""
        for index in range(len(self._pending) - 1, -1, -1):
            segment = self._pending[index]
            if isinstance(segment, str) and segment.strip():
                self._pending[index] = with_cut_note(segment)
                return
        if self._started:
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
        """Queue messages-mode segments up to the ceiling; the one past it is cut with the note."""
        for segment in segments:
            if self._cut:
                return
            room = self._limit - self._queued
            if not segment.strip() or len(segment) <= room:
                self._pending.append(segment)
                self._queued += len(segment)
                continue
            self._cut = True
            self._segmenter.drop()
            head = cut_to(segment, room)
            if head.strip():
                self._pending.append(with_cut_note(head))
            else:
                self._note_last_segment()
        if self._pending:
            self._ensure_sender()

    async def settle(self) -> None:
        if self._markers is not None:
            self._markers.drop()  # what it holds is the start of the unfinished line
        if self._delivery is Delivery.EDIT:
            self._keep_lines()
        else:
            self._segmenter.keep_lines()
        await self.finish()

    def _keep_lines(self) -> None:
        """Edit mode: drop the unfinished line of what waits (and a switch before it)."""
        waiting = [self._tail, *self._pending]
        self._tail = ""
        self._pending.clear()
        for index in range(len(waiting) - 1, -1, -1):
            piece = waiting[index]
            if isinstance(piece, str) and "\n" in piece:
                self._pending.extend(waiting[:index])
                self._pending.append(piece[: piece.rfind("\n") + 1])
                return

    def abandon(self) -> None:
        if self._markers is not None:
            self._markers.drop()
        self._segmenter.drop()
        self._pending.clear()
        self._tail = ""

    @property
    def delivered_text(self) -> str:
        return "".join(self._delivered) + self._growing_text

    @property
    def sprites(self) -> tuple[str, ...]:
        """The sprite of each message this writer sent wearing one (`Wardrobe.shown`), in
        order, repeats kept."""
        return tuple(self._sprites)

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

    def _urgency(self) -> Urgency:
        """How soon the next request matters: the turn's first text, its last, or text between."""
        if not self._answer.delivered:
            return Urgency.FIRST
        return Urgency.LAST if self._final else Urgency.MORE

    async def _writable(self) -> None:
        """Wait until the channel may be written to; what is composed after goes out at once."""
        await self._guarded(self._reserve)

    async def _reserve(self) -> bool:
        if self._reserved:
            return True
        urgency = self._urgency()
        if urgency is Urgency.FIRST and self._delivery is Delivery.MESSAGES:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ended.wait(), self._first_gather_s)
        if urgency is Urgency.MORE and not self._ended.is_set():
            # an intermediate request waits at the channel's steady pace; if the answer ends
            # meanwhile, it is the last, which a user waits on: it asks again as that
            waiting = asyncio.ensure_future(self._port.writable(urgency))
            ended = asyncio.ensure_future(self._ended.wait())
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
            urgency = self._urgency()
        await self._port.writable(urgency)
        self._reserved = True
        return True

    async def _send_segments(self) -> None:
        while self._pending and self._failure is None:
            head = self._pending[0]
            if isinstance(head, SpriteSwitch):
                self._pending.popleft()
                self._wear(head)
                continue
            if not head.strip():
                self._delivered.append(head)  # nothing to show on its own
                self._pending.popleft()
                continue
            await self._writable()
            message = self._compose()
            if message and await self._call(self._send, message) is not None:
                self._delivered.append(message)

    def _compose(self) -> str:
        """The queued segments that fit one message together, in order (one, if it alone is
        longer: a span kept whole may take it to 2000). Packing them in order, each message as
        full as it goes, gives the fewest messages the safe cuts allow."""
        if not self._pending or isinstance(self._pending[0], SpriteSwitch):
            return ""
        message = self._pending.popleft()
        assert isinstance(message, str)  # (checked above)
        while self._pending:
            following = self._pending[0]
            if isinstance(following, SpriteSwitch) or len(message) + len(following) > MESSAGE_LIMIT:
                break
            message += following
            self._pending.popleft()
        return message

    def _wear(self, switch: SpriteSwitch) -> None:
        """The messages sent from now on wear the switch's sprite."""
        if self._wardrobe is not None:
            self._wearing = switch.label
            self._wardrobe.wear(switch.label)

    async def _grow(self) -> None:
        while (self._pending or (self._final and self._tail)) and self._failure is None:
            wait = self._last_edit_at + self._edit_interval_s - time.monotonic()
            if self._growing_id is not None and wait > 0 and not self._ended.is_set():
                # the interval spaces the refreshes; the answer's end is shown at once (the
                # channel's bucket is kept by the port, whatever the interval)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._ended.wait(), wait)
            await self._writable()
            fed: list[str] = []
            switch: SpriteSwitch | None = None
            while self._pending and switch is None:
                piece = self._pending.popleft()
                if isinstance(piece, SpriteSwitch):
                    switch = piece  # what came after it waits for the next round
                else:
                    fed.append(piece)
            text = self._growing_text + self._tail + "".join(fed)
            shown = len(self._growing_text)
            keep = len(text) if self._final or switch is not None else stable_end(text, shown)
            self._tail = text[keep:]
            if keep > shown:
                await self._extend_growing(text[shown:keep])
            if self._cut:
                self._tail = ""
                self._pending.clear()
            elif switch is not None:  # the growing message is whole: the next one is new
                self._delivered.append(self._growing_text)
                self._growing_id, self._growing_text = None, ""
                self._wear(switch)

    def _room(self) -> int:
        """Edit mode: the characters the growing message and any after it may still show."""
        return self._limit - sum(len(done) for done in self._delivered)

    async def _extend_growing(self, addition: str) -> None:
        """Grow the current message by `addition`, going on in new ones as each fills up.

        The cut that ends the current message falls after what it already shows, so no text
        ever moves out of a message the user is reading. Past the ceiling the text is cut,
        with the note after it.
        """
        shown = len(self._growing_text) if self._growing_id is not None else 0
        room = self._room()
        # text a message-length past the ceiling is never shown: it is never cut either
        text = (self._growing_text + addition)[: max(room, shown) + HARD_LIMIT]
        pieces = Splitter(text).pieces(floor=shown)
        for index, piece in enumerate(pieces):
            if index > 0 and room <= len(self._growing_text):  # and the ceiling is reached
                await self._note_growing()
                return
            if index > 0:  # the message before this piece is full: it is final now
                self._delivered.append(self._growing_text)
                self._growing_id, self._growing_text = None, ""
                room = self._room()
            if self._growing_id is None:
                if not piece.strip():  # nothing visible yet: send it with what follows
                    self._growing_text = piece
                    continue
                if len(piece) > room:  # the ceiling: end here
                    piece = with_cut_note(cut_to(piece, room))
                    self._reach_ceiling()
                message_id = await self._call(self._send, piece)
                if message_id is None:
                    return
                self._growing_id, self._growing_text = message_id, piece
                self._growing_index = len(self._answer.delivered) - 1
            else:
                if len(piece) > room:
                    shown = len(self._growing_text)
                    piece = with_cut_note(cut_to(piece, room, shown), shown=shown)
                    self._reach_ceiling()
                if piece != self._growing_text:
                    if await self._call(self._edit, piece) is None:
                        return
                    self._growing_text = piece
                    self._record_growth()
            if self._cut:
                return

    def _reach_ceiling(self) -> None:
        """Edit mode: the answer ends here. What waits is dropped, and the pass is told at
        once: the model may go on for long, and its next chunk may never come."""
        self._cut = True
        self._pending.clear()
        self._answer.reached_ceiling()

    async def _note_growing(self) -> None:
        """Edit mode, the ceiling reached as a message filled: the note ends that message (or
        follows it, when the message is too full to take it)."""
        self._reach_ceiling()
        noted = with_cut_note(self._growing_text, shown=len(self._growing_text))
        if noted == self._growing_text:
            self._delivered.append(self._growing_text)
            self._growing_id, self._growing_text = None, ""
            noted = CUT_NOTE.lstrip()
            if await self._call(self._send, noted) is not None:
                self._growing_id, self._growing_text = self._answer.delivered[-1].message_id, noted
                self._growing_index = len(self._answer.delivered) - 1
        elif await self._call(self._edit, noted) is not None:
            self._growing_text = noted
            self._record_growth()

    def _record_growth(self) -> None:
        entry = self._answer.delivered[self._growing_index]
        self._answer.delivered[self._growing_index] = replace(entry, text=self._growing_text)

    async def _send(self, content: str, urgency: Urgency) -> str:
        reply_to = self._answer.reply_to if not self._answer.delivered else None
        self._reserved = False
        message_id = await self._port.send(content, reply_to=reply_to, urgency=urgency)
        self._answer.delivered.append(DeliveredMessage(message_id, content))
        if self._wearing is not None and self._wardrobe is not None:
            self._sprites.append(self._wardrobe.shown(self._wearing))
        self._last_edit_at = time.monotonic()
        self._answer.report_progress()
        return message_id

    async def _edit(self, content: str, urgency: Urgency) -> str:
        assert self._growing_id is not None
        self._reserved = False
        await self._port.edit(self._growing_id, content, urgency=urgency)
        self._last_edit_at = time.monotonic()
        self._answer.report_progress()
        return self._growing_id

    async def _call(self, operation: _Operation, content: str) -> str | None:
        """Run one send or edit once the channel is writable; None if it did not land."""

        async def request() -> str:
            urgency = self._urgency()
            await self._reserve()
            return await operation(content, urgency)

        return await self._guarded(request)

    async def _guarded[T](self, step: Callable[[], Awaitable[T]]) -> T | None:
        """Run one step of delivery; wait out rate limits; None if it failed.

        A channel that is gone ends delivery; any other failure loses this step only."""
        for _ in range(MAX_RATE_LIMIT_WAITS):
            try:
                return await step()
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
    async def __call__(self, content: str, urgency: Urgency) -> str: ...
