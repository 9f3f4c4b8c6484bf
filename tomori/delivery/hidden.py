"""Capturing the `<details>` and `<think>` blocks a model writes, so they are never posted.

Reasoning models served by vLLM, llama.cpp or Ollama put their reasoning in `<think>...</think>`
and some models fold notes into `<details>...</details>`: neither is the answer. Their bodies
go to `StreamResult.details` instead of the channel, in both delivery modes, also when a tag
arrives split across chunks (a possible tag at the end of a chunk is held until it is decided).

Only tags in prose count. A tag inside a code block or inline code (a model explaining HTML)
is content and is posted as written, so this reads fences by the same `fence_line` rule as the
splitter, and inline code by `closing_run`, the splitter's rule too (a run opens inline code
when the next run of the same length on its line closes it; until the line shows whether one
does, the text from the run is held). Tags are case-insensitive and may carry attributes; a
block may hold a `<summary>` or nested blocks of its kind.

A block still open when the answer ends: `<think>` stays hidden (a reasoning model cut off by
its token limit has written no answer yet), while `<details>` is posted as written, tag
included (a tag never closed is more likely prose about the element than a hidden block, and
hiding it would swallow the rest of the answer). Whitespace after the blocks an answer opens
with is dropped too, so an answer that is only reasoning is an empty answer.
"""

from __future__ import annotations

import re

from tomori.delivery.fences import closing_run, fence_line

_NAMES = ("details", "think")
_HIDE_UNCLOSED = {"details": False, "think": True}
_OPENING = re.compile(r"<(details|think)(?:[ \t\n][^<>]*)?>", re.IGNORECASE)
_TAG = {name: re.compile(rf"<(/?){name}(?:[ \t\n][^<>]*)?>", re.IGNORECASE) for name in _NAMES}
_INTERESTING = re.compile(r"[`<\n]")
_TICKS = re.compile(r"`+")
_LONGEST_TAG = 256
_LONGEST_CODE = 2000
"""Inline code not closed within a message's length is taken as plain backticks."""
"""A `<details ...` still without its `>` after this many characters is not a tag."""


def _may_become_tag(held: str, *, final: bool) -> bool:
    """Could more text turn `held` (starting with "<") into a tag of ours?"""
    if final or len(held) > _LONGEST_TAG or ">" in held:
        return False
    low = held.lower().removeprefix("</")
    low = "<" + low if held.startswith("</") else low
    for name in _NAMES:
        tag = "<" + name
        if tag.startswith(low):
            return True
        if low.startswith(tag) and low[len(tag)] in " \t\n":
            return True
    return False


class HiddenBlocks:
    """Splits streamed text into what is posted and what is captured."""

    def __init__(self) -> None:
        self._held = ""
        self._line: list[str] = []
        self._in_fence = False
        self._block: str | None = None  # the name of the block being captured
        self._depth = 0
        self._raw: list[str] = []  # the open block's text, tags included
        self._shown_any = False  # anything but whitespace was shown
        self._skip_space = False  # whitespace after an opening hidden block is no answer

    def feed(self, text: str) -> tuple[str, str]:
        """Take a chunk; return (visible text, captured text) that is now decided."""
        return self._run(self._held + text, final=False)

    def finish(self) -> tuple[str, str]:
        """The answer ended: decide what is still held."""
        visible, hidden = self._run(self._held, final=True)
        if self._block is not None:
            raw = "".join(self._raw)
            if _HIDE_UNCLOSED[self._block]:
                hidden += _body(raw, "")
            else:
                visible += raw
            self._block, self._raw = None, []
        return visible, hidden

    def _run(self, text: str, *, final: bool) -> tuple[str, str]:
        visible: list[str] = []
        hidden: list[str] = []
        at, self._held = 0, ""
        while at < len(text):
            if self._block is not None:
                at = self._capture(text, at, hidden, final=final)
                if at < 0:
                    break
                continue
            found = _INTERESTING.search(text, at)
            if found is None:
                self._take(text, at, len(text), visible)
                break
            where, char = found.start(), found.group()
            if char == "\n":
                self._take(text, at, where, visible)
                self._end_line(visible)
                at = where + 1
            elif char == "`":
                end = self._code(text, where, final=final)
                if end < 0:
                    self._take(text, at, where, visible)
                    self._held = text[where:]  # the run, or the code it opens, goes on
                    break
                self._take(text, at, end, visible)
                at = end
            else:
                self._take(text, at, where, visible)
                at = self._maybe_open(text, where, visible, final=final)
                if at < 0:
                    break
        return "".join(visible), "".join(hidden)

    def _take(self, text: str, start: int, end: int, visible: list[str]) -> None:
        if end > start:
            piece = text[start:end]
            self._line.append(piece)
            if self._skip_space:
                piece = piece.lstrip()
            if piece:
                visible.append(piece)
                self._skip_space = False
                self._shown_any = self._shown_any or not piece.isspace()

    def _end_line(self, visible: list[str]) -> None:
        if fence_line("".join(self._line)) is not None:
            self._in_fence = not self._in_fence
        self._line = []
        if not self._skip_space:
            visible.append("\n")

    def _code(self, text: str, where: int, *, final: bool) -> int:
        """At a backtick run: the end of the inline code it opens, or of the run itself when
        nothing on its line closes it (a plain backtick: tags after it count); -1 while the
        chunk ran out before that is decided."""
        end = _TICKS.match(text, where)
        assert end is not None
        run_end = end.end()
        if self._in_fence:
            return run_end if run_end < len(text) or final else -1
        line_end = text.find("\n", run_end)
        stop = len(text) if line_end < 0 else line_end
        close = closing_run(text, run_end, run_end - where, stop)
        if close is not None and (close < len(text) or final):
            return close
        if (close is None and (line_end >= 0 or final)) or len(text) - where > _LONGEST_CODE:
            return run_end
        return -1  # the run, or the one that may close it, may go on in the next chunk

    def _maybe_open(self, text: str, where: int, visible: list[str], *, final: bool) -> int:
        """At a "<": open a block, hold a possible tag, or take it as text. -1: held."""
        if self._in_fence:
            self._take(text, where, where + 1, visible)
            return where + 1
        opening = _OPENING.match(text, where)
        if opening is not None:
            self._block, self._depth = opening.group(1).lower(), 1
            self._raw = [opening.group()]
            return opening.end()
        if _may_become_tag(text[where : where + _LONGEST_TAG + 1], final=final):
            self._held = text[where:]
            return -1
        self._take(text, where, where + 1, visible)
        return where + 1

    def _capture(self, text: str, at: int, hidden: list[str], *, final: bool) -> int:
        """Inside a block: find its end; -1 when the chunk ran out first."""
        assert self._block is not None
        pattern = _TAG[self._block]
        while (tag := pattern.search(text, at)) is not None:
            self._raw.append(text[at : tag.end()])
            at = tag.end()
            self._depth += -1 if tag.group(1) else 1
            if self._depth == 0:
                hidden.append(_body("".join(self._raw), tag.group()))
                self._block, self._raw = None, []
                self._skip_space = not self._shown_any  # an answer opening with reasoning
                return at
        partial = text.rfind("<", at)
        if partial >= 0 and _may_become_tag(
            text[partial : partial + _LONGEST_TAG + 1], final=final
        ):
            self._raw.append(text[at:partial])
            self._held = text[partial:]
        else:
            self._raw.append(text[at:])
        return -1


def _body(raw: str, closing: str) -> str:
    """A block's text without its opening tag and `closing` tag."""
    opening = _OPENING.match(raw)
    return raw[opening.end() if opening else 0 : len(raw) - len(closing)]
