"""The answer's ceiling: how an answer that would not stop is cut, written once.

One answer shows at most `TOMORI_MAX_ANSWER_CHARS` characters, counted over the turn's
messages whatever their number, and one pass reads at most `most_read` characters from the
provider; either way its last message ends with `CUT_NOTE` (which the ceiling does not count).
"""

from __future__ import annotations

from tomori.delivery.chunking import HARD_LIMIT, MESSAGE_LIMIT, Splitter

CUT_NOTE = "\n\n-# (The answer was cut here: it was too long.)"


def cut_to(text: str, room: int, shown: int = 0) -> str:
    """As much of `text` as the answer may still show: at most `room` characters, cut where
    nothing breaks (as `Splitter` cuts), never before `shown` (a message already shows that
    much, and a shown message only grows)."""
    room = max(room, shown)
    if len(text) <= room:
        return text
    return Splitter(text, room, hard=room).pieces(floor=shown, most=2)[0]


def with_cut_note(text: str, shown: int = 0) -> str:
    """The last message of a cut answer: as much of `text` as fits with `CUT_NOTE` after it.

    The one rule both modes end an answer by: the piece is cut with room left for the note, so
    the message never goes past Discord's limit (a span kept whole may fill a message up to
    it). The cut never falls before `shown` (edit mode's message already shows that much); if
    that alone leaves no room, the note is left out rather than the message refused.
    """
    room = HARD_LIMIT - len(CUT_NOTE)
    head = text.rstrip()
    if len(head) > room and shown < room:
        cutter = Splitter(text, min(MESSAGE_LIMIT, room), hard=room)
        head = cutter.pieces(floor=shown, most=2)[0].rstrip()
    return head + CUT_NOTE if len(head) <= room else head


READ_PER_CHARACTER = 25
"""What one pass may read from the provider per character its answer may show (visible text
and hidden reasoning together): room for long reasoning. A model looping on text nobody sees
never fills a message, and progress keeps its idle timer from firing: this bound ends it."""


def most_read(max_answer_chars: int) -> int:
    """How many characters one pass may read from the provider before its answer is cut."""
    return max_answer_chars * READ_PER_CHARACTER
