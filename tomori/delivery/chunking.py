"""Cutting model text into Discord messages without breaking what must stay whole.

Discord refuses messages over 2000 characters; we aim at 1950. A cut never falls inside a code
block, inline code, a URL, a markdown link, a custom emoji, a mention, a spoiler or a bold,
italic, underlined or struck-out stretch on one line: a split URL stops working, a split code
block loses its formatting and a split spoiler shows its text. Such a span that fits in one
message may take that message up to Discord's 2000; only a span longer than that is cut. A
code block longer than a message is split at line ends with its fence and language repeated,
so each part still renders as code. Where a cut is free, a paragraph end beats a line end,
which beats a space; a cut inside a word falls between grapheme clusters (user-perceived
characters: an emoji with its skin tone, a letter with its accent, a flag), never inside one.

The spans are found once per text and looked up by bisection, so splitting is linear in the
text's length: one huge chunk costs no more per character than many small ones.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

import regex

from tomori.config.settings import FULL_MESSAGE_CHARS
from tomori.delivery.fences import Fence, fence_line, inline_code, unclosed_fence

MESSAGE_LIMIT = FULL_MESSAGE_CHARS
"""What the splitter fills a message to (declared with the settings, whose answer ceiling
counts in full messages)."""
HARD_LIMIT = 2000
"""Discord's own limit: only a protected span that would otherwise be cut goes past 1950."""

_EMPHASIS = (
    r"\|\|[^|\n]+\|\|"  # a spoiler: split, its text would show
    r"|\*\*[^*\n]+\*\*|__[^_\n]+__|~~[^~\n]+~~"  # bold, underline, strikethrough
    r"|\*(?!\s)[^*\n]+(?<!\s)\*"  # italic (not a lone "*" between spaces, as in 2 * 3)
)
_INLINE = re.compile(  # inline code is read by fences.inline_code, as the capture reads it
    r"\[[^\]\n]*\]\([^)\s]*\)"  # a markdown link
    r"|<a?:\w+:\d+>"  # a custom emoji
    r"|<(?:@[!&]?|#)\d+>"  # a user, role or channel mention
    r"|https?://\S+"  # a bare URL
    "|" + _EMPHASIS
)
_OPEN_EMPHASIS = regex.compile(_EMPHASIS)
_EMPHASIS_MARK = re.compile(r"\|\||\*|__|~~")
_CLUSTER = regex.compile(r"\X")


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of text no cut may fall inside."""

    start: int
    end: int
    fence: Fence | None = None
    """The opening fence when the span is a code block."""


def protected_spans(text: str) -> list[Span]:
    """Code blocks (by `fence_line`, an unclosed one runs to the end) and inline spans, in order."""
    spans: list[Span] = []
    outside_from = 0
    block_start, opening = -1, None
    line_start, size = 0, len(text)
    while line_start < size:
        newline = text.find("\n", line_start)
        line_end = size if newline < 0 else newline
        fence = fence_line(text[line_start:line_end])
        if fence is not None and opening is None:
            _inline_spans(text, outside_from, line_start, spans)
            block_start, opening = line_start, fence
        elif fence is not None:
            spans.append(Span(block_start, line_end, opening))
            outside_from, opening = line_end, None
        line_start = line_end + 1
    if opening is not None:
        spans.append(Span(block_start, size, opening))
    else:
        _inline_spans(text, outside_from, size, spans)
    return spans


def _inline_spans(text: str, start: int, end: int, spans: list[Span]) -> None:
    spans.extend(Span(*found) for found in _inline_found(text, start, end))


def _inline_found(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The inline spans in `text[start:end]` (prose), in order; of two that overlap, the one
    that begins first is kept, as markdown reads them."""
    found = [match.span() for match in _INLINE.finditer(text, start, end)]
    line_start = start
    while line_start <= end:
        newline = text.find("\n", line_start, end)
        line_end = end if newline < 0 else newline
        line = text[line_start:line_end]
        if "`" in line:  # inline code, also a one-line ```snippet```
            found += [(line_start + a, line_start + b) for a, b in inline_code(line)[0]]
        if newline < 0:
            break
        line_start = newline + 1
    found.sort()
    kept: list[tuple[int, int]] = []
    for span in found:
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def split_message(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Split `text` into pieces of at most `limit` characters, each safe to send alone."""
    return Splitter(text, limit).pieces()


class Splitter:
    """One text's cuts; `pieces()` runs them, and says afterwards where the last piece stands."""

    def __init__(self, text: str, limit: int = MESSAGE_LIMIT, hard: int = HARD_LIMIT) -> None:
        self.text, self.limit, self.hard = text, limit, hard
        """`hard`: how long a piece may grow to keep a protected span whole."""
        self._spans = protected_spans(text)
        self._starts = [span.start for span in self._spans]
        self.reopened = ""
        """The fence line the last piece starts with when it goes on with a split code block."""
        self.last_start = 0
        """Where, in `text`, the last piece's own text begins."""

    def pieces(self, floor: int = 0, most: int | None = None) -> list[str]:
        """Cut the text; the first cut falls at `floor` or later (text already shown).

        With `most`, cutting stops once `most - 1` pieces are cut: the last piece is all the
        rest, uncut, for a reader that can take no more messages (the answer's ceiling) and
        must not pay for cutting text it will never post.
        """
        text, pos, prefix = self.text, 0, ""
        out: list[str] = []
        while len(prefix) + len(text) - pos > self.limit and (most is None or len(out) + 1 < most):
            end, reopen = self._cut(pos, prefix, max(floor, pos + 1))
            if end <= pos:  # no room left after a reopened fence: cut the text itself
                end, reopen = self._boundary(pos, pos + self.limit, pos + 1), None
            head = prefix + text[pos:end]
            if reopen:
                assert reopen.fence is not None
                head += ("" if head.endswith("\n") else "\n") + reopen.fence.closing
                prefix = reopen.fence.opening + "\n"
            else:
                prefix = ""
            out.append(head)
            pos, floor = end, 0
        self.reopened, self.last_start = prefix, pos
        if pos < len(text) or not out:
            out.append(prefix + text[pos:])
        return out

    def _span_at(self, position: int) -> Span | None:
        """The span strictly around `position` (a cut there would split it)."""
        index = bisect.bisect_left(self._starts, position) - 1
        if index >= 0 and self._spans[index].end > position:
            return self._spans[index]
        return None

    def _cut(self, pos: int, prefix: str, floor: int) -> tuple[int, Span | None]:
        """Where the piece starting at `pos` ends, and the code block it splits, if any."""
        target = pos + self.limit - len(prefix)
        span = self._span_at(target)
        if span is not None and span.start >= floor:
            return self._free_cut(pos, span.start, floor, exact_end=True), None
        if span is not None and span.fence is not None:
            return self._code_cut(pos, prefix, span, floor), span
        if span is not None and span.end - pos + len(prefix) <= self.hard:
            return span.end, None  # a span that fits one message stays whole
        if span is not None:
            return self._boundary(pos, target, floor), None  # a span longer than any message
        return self._free_cut(pos, target, floor, exact_end=False), None

    def _free_cut(self, pos: int, end: int, floor: int, *, exact_end: bool) -> int:
        """The best separator in [floor, end]; else `end` itself, or a grapheme boundary."""
        text = self.text
        for separator in ("\n\n", "\n", " "):
            at = text.rfind(separator, pos, end)
            while at >= 0 and at + len(separator) >= floor:
                cut = at + len(separator)
                inside = self._span_at(at)
                fits = inside is None and cut > pos and self._is_boundary(pos, cut)
                if fits and (separator != " " or not self._makes_fence(pos, cut)):
                    return cut
                at = text.rfind(separator, pos, inside.start if inside else at)
        return end if exact_end else self._boundary(pos, end, floor)

    def _code_cut(self, pos: int, prefix: str, block: Span, floor: int) -> int:
        """A line end inside the code block that lets the piece close its fence in time."""
        assert block.fence is not None
        room = len(prefix) + len(block.fence.closing) + 1
        budget_end = pos + self.limit - room
        if floor - 1 > budget_end:
            # A growing message already shows past the target, and what is shown stays: its
            # fence closes after the line it shows, within Discord's own limit.
            budget_end = pos + self.hard - room
        body = self.text.find("\n", block.start) + 1 if block.start >= pos else pos
        at = self.text.rfind("\n", max(body, floor - 1), budget_end)
        if at >= max(body, floor - 1) and at + 1 > pos:
            return at + 1
        return max(floor, self._boundary(pos, budget_end, max(floor, body)))

    def _makes_fence(self, pos: int, cut: int) -> bool:
        """Would a cut inside a line leave a part that reads as a fence line on its own?

        Only the parts the two messages show are read (the line from `pos`, and at most a
        message's length after the cut): a line as long as the whole text costs no more.
        """
        text = self.text
        line_start = text.rfind("\n", pos, cut) + 1
        reach = min(len(text), cut + self.limit)
        line_end = text.find("\n", cut, reach)
        after = text[cut : reach if line_end < 0 else line_end]
        before = text[max(pos, line_start) : cut]
        return fence_line(before) is not None or fence_line(after) is not None

    def _boundary(self, pos: int, end: int, floor: int) -> int:
        """The last grapheme-cluster boundary at or before `end` (and after `pos`)."""
        if self._is_boundary(pos, end):
            return end
        best = end
        for match in _CLUSTER.finditer(self.text, pos, min(len(self.text), end + 64)):
            if match.start() > end:
                break
            if match.start() > pos and match.start() >= floor:
                best = match.start()
        return best

    def _is_boundary(self, pos: int, at: int) -> bool:
        text = self.text
        if at >= len(text) or at <= pos:
            return True
        before, after = text[at - 1], text[at]
        if before < "\x7f" and after < "\x7f":
            return not (before == "\r" and after == "\n")
        for match in _CLUSTER.finditer(text, pos, min(len(text), at + 64)):
            if match.start() >= at:
                return match.start() == at
        return False


def stable_end(text: str, floor: int = 0) -> int:
    """How much of a growing `text` can be shown now without a protected span straddling it.

    Edit mode cannot take back what it showed, so it holds the tail that more text could
    turn into a URL, mention, emoji, link or inline code: in the last word, from where such a
    span could begin (a word of plain prose or CJK text is shown at once), and on the last
    line an unclosed link label or backtick run. The next chunk (or the answer's end) decides.
    A last character that is not ASCII is held with its grapheme cluster, which more text may
    extend (a half emoji sequence ending in a joiner would show for an edit interval).
    Inside a code block it holds the unfinished line: a message that grows only can then always
    end at a line end, so a code block longer than one message is never cut inside a line
    (a line longer than a message is shown anyway: it must be cut somewhere).
    """
    line_start = text.rfind("\n") + 1
    line = text[line_start:]
    word = max(line.rfind(" "), line.rfind("\t")) + 1
    held = [len(text)]
    begins = [line.find(mark, word) for mark in ("<", "[", "`", "http")]
    begins += [len(line) - len(end) for end in _URL_STARTS if line.endswith(end)]
    held += [line_start + at for at in begins if at >= 0]
    bracket = line.rfind("[")
    if bracket >= 0 and ")" not in line[bracket:]:
        held.append(line_start + bracket)
    if (emphasis := _open_emphasis(line)) is not None:
        held.append(line_start + emphasis)
    unclosed_code = inline_code(line)[1]
    if unclosed_code is not None:  # inline code more text on the line may close
        held.append(line_start + unclosed_code)
    if fence_line(line) is not None:
        held.append(line_start)
    elif len(line) <= MESSAGE_LIMIT and unclosed_fence(text[:line_start]) is not None:
        held.append(line_start)  # a code line: a cut may only fall at its end
    if line and line[-1] >= "\x7f":  # a ZWJ, a lone flag letter, an emoji a skin tone may follow
        held.append(_last_cluster(text))
    at = min(held) - line_start
    if at < len(line):  # what is held may begin inside a span (the "http" of a link): hold it all
        for span_start, span_end in _inline_found(line, max(0, at - HARD_LIMIT), len(line)):
            if span_end > at:
                held.append(line_start + min(at, span_start))
                break
    return max(floor, min(held))


def settled_end(text: str, shown: int) -> int:
    """How much of a growing `text` edit mode shows once the model's stream stopped early
    (a stall, a drop), `shown` of it being in the channel already: its complete lines; and
    where the channel shows part of the line after them, that line up to a whole word, the
    word it shows in half completed with what the model wrote of it (`stable_end` may have
    held "h" back from "throug|h": "http" might have followed). The next model goes on from
    what this shows, so it never begins inside a word the channel shows cut.
    """
    line_start = text.rfind("\n") + 1
    if line_start >= shown:  # nothing of the unfinished line is shown: it goes
        return line_start
    end = shown
    if not text[shown - 1].isspace():  # the channel shows a word in half: complete it
        space = _SPACE.search(text, shown)
        end = space.start() if space is not None else len(text)
    last_space = max(text.rfind(" "), text.rfind("\t"))
    if last_space >= end:  # the whole words after it, no span left open
        end = stable_end(text[: last_space + 1], end)
    return end


_SPACE = re.compile(r"\s")


def _last_cluster(text: str) -> int:
    """Where the last grapheme cluster begins: more text may still extend it."""
    start = len(text)
    for cluster in _CLUSTER.finditer(text, max(0, len(text) - 64)):
        start = cluster.start()
    return start


def _open_emphasis(line: str) -> int | None:
    """Where in `line` a spoiler or emphasis begins that more text could still close.

    Only the last `HARD_LIMIT` characters are read: a span begun before them is longer than a
    message and would be cut anyway. A mark inside a span already found (a closed emphasis, a
    URL, a link, inline code: read as `protected_spans` reads them) begins nothing; a mark
    after one does, though the same mark would have closed an emphasis had the span before
    not taken its opening mark ("https://x/a**b c**" then "d**" is bold from "c**" on).
    """
    window = max(0, len(line) - HARD_LIMIT)
    found = _inline_found(line, window, len(line))
    starts = [start for start, _ in found]
    for mark in _EMPHASIS_MARK.finditer(line, window):
        at = mark.start()
        index = bisect.bisect_right(starts, at) - 1
        if index >= 0 and found[index][1] > at:
            continue  # inside (or at the start of) a span found whole
        span = _OPEN_EMPHASIS.match(line, at, partial=True)
        if span is not None and span.partial:
            return at
    return None


_URL_STARTS = ("h", "ht", "htt")
"""Word ends that "http" may follow ("http" itself is held wherever it stands in the word)."""
