"""Text as the terminal prints it: nothing a model writes moves the cursor or reads other than
it is, the columns a line takes, and a notice as its embed would read."""

from __future__ import annotations

import re
import time
import unicodedata

from tomori.delivery.notices import Notice

CONTROLS = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f"
    r"\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]"
)
"""What a model could write to move the cursor, clear the screen or retitle the window (C0
and C1 controls), or to make text read other than it is: bidirectional overrides and
isolates (U+202E shows "txt.exe" as "exe.txt"), invisible marks and spaces, line and paragraph
separators. They print as escapes (`\\x1b`, `\\u202e`). The joiners (U+200C, U+200D) print as
they are: emoji and scripts are written with them."""


def one_column(character: str) -> bool:
    """Whether the terminal shows `character` one column wide (wide and combining ones are
    not; a tab is not)."""
    if not character.isprintable() or unicodedata.combining(character):
        return False
    return unicodedata.east_asian_width(character) not in ("W", "F")


def width(text: str) -> int:
    """The columns `text` takes on a terminal (wide characters two, combining ones none)."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _escaped(control: re.Match[str]) -> str:
    code = ord(control.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


TIMESTAMP = re.compile(r"<t:(-?\d{1,12})(?::[tTdDfFR])?>")
"""Discord's timestamp markup (`<t:1700000000:R>`), which each reader sees in their own terms."""


def notice_text(notice: Notice, reply_to: int | None = None, now: float | None = None) -> str:
    """A notice as the terminal shows it: its title (and the message it replies to), then what
    the embed says, its timestamps as Discord would show them ("in 9 s")."""
    replying = "" if reply_to is None else f", replying to #{reply_to}"
    at = time.time() if now is None else now
    description = TIMESTAMP.sub(
        lambda found: _relative(int(found.group(1)) - at), notice.description
    )
    return f"[{notice.title}{replying}] {description}"


def _relative(seconds: float) -> str:
    left = abs(round(seconds))
    amount = next(
        f"{left // size} {unit}"
        for size, unit in ((3600, "h"), (60, "min"), (1, "s"))
        if left >= size or size == 1
    )
    return f"in {amount}" if seconds >= 0 else f"{amount} ago"


def printable(text: str) -> str:
    """`text` with every control (see `CONTROLS`) written as its escape."""
    return CONTROLS.sub(_escaped, text)
