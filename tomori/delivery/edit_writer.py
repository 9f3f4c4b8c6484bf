"""Edit mode: the answer as one message that grows by edits, going on in a new one when full.

At most one edit per `STREAM_EDIT_INTERVAL_MS` and one per time the channel may be written to
(under load the interval stretches by itself), the edit that ends the answer at once, and a new
message past 1950 characters, or once an edit did not land. A shown message only ever grows:
the cut that ends it falls after the text already shown, never inside it, and the tail of the
text is held back until it cannot become part of a span kept whole (a link, a code block).
When the model's stream stops early, the line the message shows in part ends at a whole word,
never in the middle of one (`chunking.settled_end`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import replace
from typing import Any

from tomori.delivery.ceiling import CUT_NOTE, cut_to, with_cut_note
from tomori.delivery.chunking import HARD_LIMIT, Splitter, settled_end, stable_end
from tomori.delivery.fences import fence_line, unclosed_fence
from tomori.delivery.port import AnswerRecord, ChannelPort
from tomori.delivery.sprite_markers import SpriteSwitch
from tomori.delivery.writer import ChannelWriter, Phase


class EditWriter(ChannelWriter):
    """A pass's text as a growing message (see the module docstring)."""

    def __init__(self, port: ChannelPort, answer: AnswerRecord, **options: Any) -> None:
        super().__init__(port, answer, **options)
        self._tail = ""
        """The text held back until it cannot become part of a protected span."""
        self._growing_id: str | None = None
        self._growing_text = ""
        self._growing_index = -1
        """The growing message's place in the turn's delivered list."""
        self._stopped_early = False
        """The model's stream stopped before its end: its last text is shown as far as
        `settled_end` says, not whole."""

    @property
    def delivered_text(self) -> str:
        return super().delivered_text + self._growing_text

    def _take(self, text: str) -> None:
        self._pending.append(text)
        self._start()

    def _end_message(self) -> None:
        return None  # the switch itself ends the growing message, as it is sent

    def _ending(self) -> None:
        if self._tail:
            self._start()

    async def _ended(self) -> None:
        await self._close_growing_code()
        if self._noted and self._growing_id is not None:
            noted = with_cut_note(self._growing_text, shown=len(self._growing_text))
            if noted != self._growing_text and await self._sender.edit(self._growing_id, noted):
                self._growing_text = noted
                self._record_growth()

    def _keep_lines(self) -> None:
        """What waits is shown as `settled_end` says, once the growing message is known: a
        send on the wire may still be growing it."""
        self._stopped_early = True

    def _drop_waiting(self) -> None:
        self._pending.clear()
        self._tail = ""

    async def _close_growing_code(self) -> None:
        """A code block the answer left open is closed, as messages mode does."""
        if self._growing_id is None:
            return
        fence = unclosed_fence(self._growing_text)
        if fence is None or fence_line(self._growing_text.rsplit("\n", 1)[-1]) is not None:
            return  # nothing open, or the answer ended on its opening fence: shown as written
        separator = "" if self._growing_text.endswith("\n") else "\n"
        closed = self._growing_text + separator + fence.closing
        if await self._sender.edit(self._growing_id, closed):
            self._growing_text = closed
            self._record_growth()

    async def _deliver(self) -> None:
        sender = self._sender
        ended = sender.ended
        while (self._pending or (ended.is_set() and self._tail)) and sender.failure is None:
            wait = sender.last_write_at + self._edit_interval_s - time.monotonic()
            if self._growing_id is not None and wait > 0 and not ended.is_set():
                # the interval spaces the refreshes; the answer's end is shown at once (the
                # channel's bucket is kept by the port, whatever the interval)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ended.wait(), wait)
            await sender.writable()
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
            if switch is not None:  # the text before a sprite switch is whole
                keep = len(text)
            elif ended.is_set():
                keep = settled_end(text, shown) if self._stopped_early else len(text)
            else:
                keep = stable_end(text, shown)
            self._tail = "" if ended.is_set() else text[keep:]
            if keep > shown:
                await self._extend_growing(text[shown:keep])
            if self._is_cut:
                self._tail = ""
                self._pending.clear()
            elif switch is not None:  # the growing message is whole: the next one is new
                self._delivered.append(self._growing_text)
                self._growing_id, self._growing_text = None, ""
                sender.wear(switch.label)

    def _room(self) -> int:
        """The characters the growing message and any after it may still show."""
        return self._limit - sum(len(done) for done in self._delivered)

    async def _extend_growing(self, addition: str) -> None:
        """Grow the current message by `addition`, going on in new ones as each fills up.

        The cut that ends the current message falls after what it already shows, so no text
        ever moves out of a message the user is reading. Past the ceiling the text is cut,
        with the note after it.
        """
        sender = self._sender
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
                message_id = await sender.send(piece)
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
                    if not await sender.edit(self._growing_id, piece):
                        await self._go_on_anew(addition)
                        return
                    self._growing_text = piece
                    self._record_growth()
            if self._is_cut:
                return

    async def _go_on_anew(self, unshown: str) -> None:
        """The growing message took no edit (Discord failed it, asked twice, or its webhook is
        gone): it stays as it shows, and the text it could not show goes on in a new message,
        its code block opened again, rather than leave a hole in the answer."""
        fence = unclosed_fence(self._growing_text)
        self._delivered.append(self._growing_text)
        self._growing_id, self._growing_text = None, ""
        await self._extend_growing(("" if fence is None else fence.opening + "\n") + unshown)

    def _reach_ceiling(self) -> None:
        """The answer ends here. What waits is dropped, and the pass is told at once: the
        model may go on for long, and its next chunk may never come."""
        self._phase = Phase.CUT
        self._pending.clear()
        self._answer.reached_ceiling()

    async def _note_growing(self) -> None:
        """The ceiling reached as a message filled: the note ends that message (or follows
        it, when the message is too full to take it)."""
        self._reach_ceiling()
        noted = with_cut_note(self._growing_text, shown=len(self._growing_text))
        if noted == self._growing_text:
            self._delivered.append(self._growing_text)
            self._growing_id, self._growing_text = None, ""
            noted = CUT_NOTE.lstrip()
            if await self._sender.send(noted) is not None:
                self._growing_id, self._growing_text = self._answer.delivered[-1].message_id, noted
                self._growing_index = len(self._answer.delivered) - 1
        elif self._growing_id is not None and await self._sender.edit(self._growing_id, noted):
            self._growing_text = noted
            self._record_growth()

    def _record_growth(self) -> None:
        entry = self._answer.delivered[self._growing_index]
        self._answer.delivered[self._growing_index] = replace(entry, text=self._growing_text)
