"""The one rule for code fences and inline code, shared by every part that reads markdown.

The segmenter, the splitter and the hidden-block capture must agree on where code starts and
ends, or one of them wraps prose in code blocks or hides a tag the user should see. A fence
line is, as in CommonMark and Discord, a line of optional indentation, three or more backticks
and an info string that holds no backtick: so "```python" opens a block while a line such as
"```npm i``` installs it." is a complete one-line snippet, not a fence. Inside a block any
fence line closes it, as Discord renders it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE_LINE = re.compile(r"[ \t]*(`{3,})([^`\r\n]*)\r?")
_LONGEST_LANGUAGE = 32
"""A longer first word is no language: it is not repeated when a block is split."""


@dataclass(frozen=True, slots=True)
class Fence:
    """A fence line's backtick run and language (the first word of its info string)."""

    ticks: str
    language: str

    @property
    def opening(self) -> str:
        """The line that reopens this block in a later message."""
        return self.ticks + self.language

    @property
    def closing(self) -> str:
        return self.ticks


def fence_line(line: str) -> Fence | None:
    """The fence `line` is (without its newline), or None if it is not a fence line."""
    if "```" not in line:
        return None
    match = _FENCE_LINE.fullmatch(line)
    if match is None:
        return None
    words = match.group(2).split()
    language = words[0] if words and len(words[0]) <= _LONGEST_LANGUAGE else ""
    return Fence(match.group(1), language)


def unclosed_fence(text: str) -> Fence | None:
    """The fence of a code block still open at the end of `text`, if one is."""
    open_fence: Fence | None = None
    for line in text.split("\n"):
        fence = fence_line(line)
        if fence is not None:
            open_fence = fence if open_fence is None else None
    return open_fence


_TICK_RUN = re.compile(r"`+")


def closing_run(text: str, start: int, ticks: int, stop: int) -> int | None:
    """Where inline code opened by a run of `ticks` backticks ends: after the next run of
    exactly as many in `text[start:stop]` (the rest of its line), or None if there is none.

    The one inline-code rule, as in CommonMark and Discord: a run of backticks opens inline
    code that the next run of the same length closes, and a line end ends the search; a run
    nothing closes is a plain backtick, and the text after it is prose. The capture, the
    splitter and edit mode's hold all read inline code by it.
    """
    for run in _TICK_RUN.finditer(text, start, stop):
        if run.end() - run.start() == ticks:
            return run.end()
    return None


def inline_code(line: str) -> tuple[list[tuple[int, int]], int | None]:
    """The inline code spans of `line` (no newline in it), and where its first run that
    nothing closes begins (more text on the line could still close it), if any."""
    spans: list[tuple[int, int]] = []
    unclosed: int | None = None
    at = 0
    while (run := _TICK_RUN.search(line, at)) is not None:
        end = closing_run(line, run.end(), run.end() - run.start(), len(line))
        if end is None:
            unclosed = run.start() if unclosed is None else unclosed
            at = run.end()
        else:
            spans.append((run.start(), end))
            at = end
    return spans, unclosed
