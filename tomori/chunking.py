"""Cutting model text into Discord messages without breaking what must stay whole.

Discord refuses messages over 2000 characters; we stay at 1950. A cut never falls inside a code
block, inline code, a URL, a markdown link, a custom emoji or a mention: a split URL stops
working and a split code block loses its formatting. A code block longer than a message is
split at line ends with its fence and language repeated, so each part still renders as code.
Where a cut is free, a paragraph end beats a line end, which beats a space.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MESSAGE_LIMIT = 1950
SOFT_LIMIT = 1000
"""In messages mode a line end is enough to flush once this much text is waiting."""

_PROTECTED = re.compile(
    r"```.*?(?:```|\Z)"  # a fenced code block (an unclosed one runs to the end)
    r"|`[^`\n]+`"  # inline code
    r"|\[[^\]\n]*\]\([^)\s]*\)"  # a markdown link
    r"|<a?:\w+:\d+>"  # a custom emoji
    r"|<(?:@[!&]?|#)\d+>"  # a user, role or channel mention
    r"|https?://\S+",  # a bare URL
    re.DOTALL,
)
_FENCE = re.compile(r"^\s*```(\S*)")


def split_message(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Split `text` into pieces of at most `limit` characters, each safe to send alone."""
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        head, rest = _cut(rest, limit)
        pieces.append(head)
    if rest:
        pieces.append(rest)
    return pieces


def _cut(text: str, limit: int) -> tuple[str, str]:
    spans = [match.span() for match in _PROTECTED.finditer(text, 0, len(text))]
    blocking = next((span for span in spans if span[0] < limit < span[1]), None)
    if blocking is not None and blocking[0] == 0:
        if text.startswith("```"):
            return _cut_code_block(text, limit)
        return text[:limit], text[limit:]  # one URL or span longer than a message
    window = text[: blocking[0] if blocking else limit + 1]
    for separator in ("\n\n", "\n", " "):
        at = window.rfind(separator, 0, limit)
        while at > 0 and _inside(at, spans):
            at = window.rfind(separator, 0, at)
        if at > 0:
            end = at + len(separator)
            return text[:end], text[end:]
    end = blocking[0] if blocking else limit
    return text[:end], text[end:]


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start < position < end for start, end in spans)


def _cut_code_block(text: str, limit: int) -> tuple[str, str]:
    """Split a code block at a line end, closing it and reopening it with its language."""
    opening = text[: text.index("\n") + 1] if "\n" in text else "```\n"
    closing = "\n```"
    budget = limit - len(closing)
    at = text.rfind("\n", len(opening), budget + 1)
    end = at + 1 if at > len(opening) else budget
    return text[:end].rstrip("\n") + closing, opening + text[end:]


@dataclass
class Segmenter:
    """Turns streamed text into messages, each sent once, at safe boundaries.

    A segment ends at a paragraph end or a closing code fence, or at a line end once
    `SOFT_LIMIT` characters wait, or wherever `split_message` cuts when a message would grow
    past `MESSAGE_LIMIT`. Only whole lines are inspected, once each, so feeding is linear in
    the length of the answer.
    """

    limit: int = MESSAGE_LIMIT
    soft_limit: int = SOFT_LIMIT
    _buffer: str = ""
    _scanned: int = 0
    _in_code: bool = False
    _fence: str = "```"
    _ready: list[str] = field(default_factory=list)

    def feed(self, text: str) -> list[str]:
        """Add text; return the segments that are now complete."""
        self._buffer += text
        if "\n" in text:
            self._scan_lines()
        if len(self._buffer) > self.limit:
            self._overflow()
        ready, self._ready = self._ready, []
        return ready

    def finish(self) -> list[str]:
        """Everything still held, an unclosed code block closed so it renders."""
        rest, self._buffer = self._buffer, ""
        if self._in_code and rest.strip():
            rest = rest.rstrip("\n") + "\n```"
        self._reset_scan()
        return split_message(rest, self.limit) if rest.strip() else []

    def drop(self) -> None:
        """Forget what is held (the pass was abandoned)."""
        self._buffer = ""
        self._reset_scan()

    def _reset_scan(self) -> None:
        self._scanned = 0
        self._in_code = False

    def _scan_lines(self) -> None:
        while (newline := self._buffer.find("\n", self._scanned)) >= 0:
            line = self._buffer[self._scanned : newline]
            end = newline + 1
            self._scanned = end
            fence = _FENCE.match(line)
            if fence:
                self._in_code = not self._in_code
                if self._in_code:
                    self._fence = "```" + fence.group(1)
                else:
                    self._emit(end)
                    continue
            if self._in_code:
                continue
            if (not line.strip() and self._buffer[:end].strip()) or end >= self.soft_limit:
                self._emit(end)

    def _emit(self, end: int) -> None:
        head, self._buffer = self._buffer[:end], self._buffer[end:]
        self._scanned -= end
        if head.strip():
            self._ready.extend(split_message(head, self.limit))

    def _overflow(self) -> None:
        """The waiting text would not fit one message: send all but its tail."""
        if self._in_code:
            lines_end = self._buffer.rfind("\n", 0, self.limit - 4) + 1
            end = lines_end if lines_end > len(self._fence) + 1 else self.limit - 4
            head = self._buffer[:end].rstrip("\n") + "\n```"
            self._buffer = self._fence + "\n" + self._buffer[end:]
            self._scanned = max(len(self._fence) + 1, self._scanned - end + len(self._fence) + 1)
            self._ready.append(head)
            return
        pieces = split_message(self._buffer, self.limit)
        self._ready.extend(pieces[:-1])
        self._buffer = pieces[-1]
        self._scanned = 0
        self._scan_lines()
