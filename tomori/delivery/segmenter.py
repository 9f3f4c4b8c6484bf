"""Turning streamed text into messages, each sent once, at boundaries safe to cut.

Messages mode cannot take a message back, so each segment is final: it ends where the text
says a message may end (a paragraph, a closed code block), or where `Splitter` cuts once the
waiting text would not fit one message. The cutting rules themselves live in `chunking`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tomori.delivery.chunking import HARD_LIMIT, MESSAGE_LIMIT, Splitter, stable_end
from tomori.delivery.fences import fence_line, unclosed_fence

SOFT_LIMIT = 1000
"""In messages mode a line end is enough to flush once this much text is waiting: each of its
lines is then a segment of its own, so the writer fills every message with as many as fit."""


@dataclass
class Segmenter:
    """Turns streamed text into messages, each sent once, at safe boundaries.

    A segment ends at a paragraph end or a closing code fence, or at each line end once
    `SOFT_LIMIT` characters wait (a segment per line: released as one, a run of lines as long
    as the soft limit would share no message with the next, and an answer without blank lines
    would take nearly twice the messages it needs), or wherever `split_message` cuts when a
    message would grow past `MESSAGE_LIMIT` (text that may still become a protected span waits
    for the next chunk, so the cuts do not depend on how the model chunks its text). Each line
    is inspected once and the held text is cut once per feed, so feeding is linear in the
    answer's length.
    """

    limit: int = MESSAGE_LIMIT
    soft_limit: int = SOFT_LIMIT
    wanted: int | None = None
    """How many more segments the reader can use (None: any): no text is cut past them."""
    _buffer: str = ""
    _scanned: int = 0
    _in_code: bool = False
    _mid_line: bool = False
    """The held text starts inside a line (after a cut): that line is no fence."""

    def feed(self, text: str) -> list[str]:
        """Add text; return the segments that are now complete."""
        self._buffer += text
        ready: list[str] = []
        if "\n" in text:
            ready += self._scan_lines()
        room = None if self.wanted is None else self.wanted - len(ready)
        if len(self._buffer) > self.limit and (room is None or room > 0):
            ready += self._overflow(None if room is None else room + 1)
        return ready

    def finish(self) -> list[str]:
        """Everything still held, an unclosed code block closed so it renders.

        The last line has no newline after it, yet it may be the closing fence (models usually
        end that way): it is read like every other line before deciding the block is open.
        """
        rest, self._buffer = self._buffer, ""
        last_line = rest[rest.rfind("\n") + 1 :]
        closes = not (self._mid_line and "\n" not in rest) and fence_line(last_line) is not None
        if self._in_code and not closes and rest.strip():
            rest = rest.rstrip("\n") + "\n" + self._closing(rest)
        self._reset_scan()
        return self._release(rest, 0)

    def keep_lines(self) -> None:
        """Forget the unfinished line of what is held (the stream stopped in it): `finish`
        then releases the complete lines before it."""
        self._buffer = self._buffer[: self._buffer.rfind("\n") + 1]
        self._scanned = min(self._scanned, len(self._buffer))

    def drop(self) -> None:
        """Forget what is held (the pass was abandoned)."""
        self._buffer = ""
        self._reset_scan()

    def _closing(self, held: str) -> str:
        fence = unclosed_fence(held)
        return "```" if fence is None else fence.closing

    def _reset_scan(self) -> None:
        self._scanned = 0
        self._in_code = self._mid_line = False

    def _scan_lines(self) -> list[str]:
        """Read the complete lines not read yet; cut the buffer once, after the last release."""
        buffer, released = self._buffer, 0
        ready: list[str] = []
        while (newline := buffer.find("\n", self._scanned)) >= 0:
            if self.wanted is not None and len(ready) >= self.wanted:
                break  # the reader is full: the rest waits, uncut
            line = buffer[self._scanned : newline]
            end = self._scanned = newline + 1
            if self._mid_line:
                self._mid_line = False
                continue
            if fence_line(line) is not None:
                self._in_code = not self._in_code
                if not self._in_code:
                    ready += self._release(buffer[released:end], len(ready))
                    released = end
                continue
            if self._in_code:
                continue
            paragraph_end = not line.strip() and buffer[released:end].strip()
            if paragraph_end:
                ready += self._release(buffer[released:end], len(ready))
                released = end
            elif end - released >= self.soft_limit:
                ready += self._release_lines(buffer[released:end], len(ready))
                released = end
        if released:
            self._buffer = buffer[released:]
            self._scanned -= released
        return ready

    def _release(self, head: str, taken: int) -> list[str]:
        """`head` cut into segments, no more than the reader wants after `taken` (and one)."""
        if not head.strip():
            return []
        most = None if self.wanted is None else max(1, self.wanted - taken) + 1
        return Splitter(head, self.limit).pieces(most=most)

    def _release_lines(self, head: str, taken: int) -> list[str]:
        """`head`, lines outside code with no paragraph end among them, as a segment per line
        (a blank line goes with the line after it)."""
        ready: list[str] = []
        start = 0
        newline = head.find("\n")
        while newline >= 0:
            if head[start : newline + 1].strip():
                ready += self._release(head[start : newline + 1], taken + len(ready))
                start = newline + 1
            newline = head.find("\n", newline + 1)
        return ready + self._release(head[start:], taken + len(ready))

    def _overflow(self, most: int | None) -> list[str]:
        """The waiting text would not fit one message: send all but its tail.

        Text that more text could still turn into a protected span (an unclosed link, inline
        code, spoiler...) is held back and not cut, as edit mode does: the cut is decided
        once the span closes, so it falls where it would had the text come in one chunk.
        """
        buffer = self._buffer
        held = stable_end(buffer)
        if len(buffer) - held > HARD_LIMIT:  # longer than any message: it is cut anyway
            held = len(buffer)
        if held <= self.limit:
            return []
        splitter = Splitter(buffer[:held], self.limit)
        pieces = splitter.pieces(most=most)
        self._buffer = pieces[-1] + buffer[held:]
        start = splitter.last_start
        self._in_code = bool(splitter.reopened)  # the tail goes on with a split code block
        self._scanned = len(splitter.reopened)
        self._mid_line = not self._in_code and start > 0 and splitter.text[start - 1] != "\n"
        return [piece for piece in pieces[:-1] if piece.strip()]
