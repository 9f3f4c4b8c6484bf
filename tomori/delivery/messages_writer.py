"""Messages mode: the answer as messages that are sent whole and never edited.

The `Segmenter` releases text at safe boundaries, and each send carries every released segment
that fits one message together (never over 2000 characters): a short answer is one message, a
burst of paragraphs is not ten. The turn's first message gathers for `FIRST_GATHER_S` unless
the answer ends sooner (the last paragraph is released only then, so an answer given at once
would otherwise be two messages); the ones after wait at the channel's steady pace, gathering
what came meanwhile.
"""

from __future__ import annotations

from typing import Any

from tomori.delivery.ceiling import CUT_NOTE, cut_to, with_cut_note
from tomori.delivery.chunking import MESSAGE_LIMIT
from tomori.delivery.port import AnswerCut, AnswerRecord, ChannelPort
from tomori.delivery.segmenter import Segmenter
from tomori.delivery.sprite_markers import SpriteSwitch
from tomori.delivery.writer import ChannelWriter, Phase


class MessagesWriter(ChannelWriter):
    """A pass's text as whole messages (see the module docstring)."""

    def __init__(self, port: ChannelPort, answer: AnswerRecord, **options: Any) -> None:
        super().__init__(port, answer, **options)
        self._segmenter = Segmenter()
        self._queued = 0
        """The characters of the answer queued so far, against the ceiling."""

    def _take(self, text: str) -> None:
        # each segment holds a character at least: no more can fit, and one shows more follows
        self._segmenter.wanted = max(0, self._limit - self._queued) + 1
        self._queue(self._segmenter.feed(text))
        if self._is_cut:
            raise AnswerCut

    def _end_message(self) -> None:
        self._queue(self._segmenter.finish())

    def _ending(self) -> None:
        if not self._is_cut:
            self._queue(self._segmenter.finish())
            if self._noted and not self._is_cut:
                self._note_last_segment()

    async def _ended(self) -> None:
        return None  # the note, if any, went with the last message

    def _keep_lines(self) -> None:
        self._segmenter.keep_lines()

    def _drop_waiting(self) -> None:
        self._segmenter.drop()
        self._pending.clear()

    def _queue(self, segments: list[str]) -> None:
        """Queue segments up to the ceiling; the one past it is cut with the note."""
        for segment in segments:
            if self._is_cut:
                return
            room = self._limit - self._queued
            if not segment.strip() or len(segment) <= room:
                self._pending.append(segment)
                self._queued += len(segment)
                continue
            self._phase = Phase.CUT
            self._segmenter.drop()
            head = cut_to(segment, room)
            if head.strip():
                self._pending.append(with_cut_note(head))
            else:
                self._note_last_segment()
        if self._pending:
            self._start()

    def _note_last_segment(self) -> None:
        """The note ends the last message, or follows it if it is sent."""
        for index in range(len(self._pending) - 1, -1, -1):
            segment = self._pending[index]
            if isinstance(segment, str) and segment.strip():
                self._pending[index] = with_cut_note(segment)
                return
        if self._phase is not Phase.BEFORE_TEXT:
            self._pending.append(CUT_NOTE.lstrip())

    async def _deliver(self) -> None:
        sender = self._sender
        while self._pending and sender.failure is None:
            head = self._pending[0]
            if isinstance(head, SpriteSwitch):
                self._pending.popleft()
                sender.wear(head.label)
                continue
            if not head.strip():
                self._delivered.append(head)  # nothing to show on its own
                self._pending.popleft()
                continue
            await sender.writable()
            message = self._compose()
            if message and await sender.send(message) is not None:
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
