"""The console's own line editing in a terminal: keys become messages, a paste one message.

A terminal in its usual mode hands over a line at a time and echoes keys where they fall, so a
pasted traceback became one message per line, and keys typed while an answer streamed landed
inside it. The console therefore takes the keys itself (`keys_mode`: no line buffering, no
echo, bracketed paste on) and `LineEditor` turns them into a draft and messages:

- A paste is one message, its lines and indentation kept: the terminal marks it
  (`ESC[200~` ... `ESC[201~`, bracketed paste) and Enter inside it is a line break; where the
  terminal does not mark it, an Enter that more keys follow at once (in the same read, or within
  `READ_AHEAD_S`, quicker than anyone types) is a line break too. Enter sends the draft.
- A draft that opens a code fence goes on until the fence closes, and one ending in `\\` goes
  on to the next line (the backslash dropped), as piped lines do (`MessageLines`).
- Backspace, Ctrl+U (the line) and Ctrl+W (the word) erase; Up and Down bring back the
  messages sent before (and the draft again below them); Ctrl+D on an empty draft ends the
  input; other controls and escape sequences (left, right, function keys) are dropped.

The editor only keeps the draft and says what changed; the session shows it (after the
prompt, or not at all while an answer streams, to be shown with the next prompt).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

from tomori.console.input import open_fence

READ_AHEAD_S = 0.03
"""How long an Enter waits for more keys before it sends: a paste's next line comes at once,
a person's next key far later."""

PASTE_ON = "\x1b[?2004h"
PASTE_OFF = "\x1b[?2004l"
PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"

ENTER = "\r\n"
ERASE_CHAR = "\x7f\x08"
ERASE_LINE = "\x15"
ERASE_WORD = "\x17"
END_OF_INPUT = "\x04"
ESCAPE = "\x1b"
UP = ("\x1b[A", "\x1bOA")
DOWN = ("\x1b[B", "\x1bOB")


@dataclass(frozen=True, slots=True)
class Typed:
    """Text added to the end of the draft."""

    text: str


@dataclass(frozen=True, slots=True)
class Erased:
    """Text taken from the end of the draft, and the draft it leaves."""

    text: str
    draft: str


@dataclass(frozen=True, slots=True)
class Sent:
    """The draft, sent as a message (or a command); the draft is empty again."""

    text: str


@dataclass(frozen=True, slots=True)
class Ended:
    """Ctrl+D on an empty draft: the end of input."""


Edit = Typed | Erased | Sent | Ended


class LineEditor:
    """The draft being typed, and what each key does to it (see the module docstring)."""

    def __init__(self) -> None:
        self.draft = ""
        self._escape = ""
        """An escape sequence begun and not yet ended (a read may cut one)."""
        self._pasting = False
        self._after_cr = False
        """The last key was a carriage return: a line feed after it is the same line end."""
        self.enter_pending = False
        """An Enter ended the last read: it sends unless more keys follow (`commit`)."""
        self._sent: list[str] = []
        """The messages sent, oldest first, for Up and Down."""
        self._recalled: int | None = None
        """Which of `_sent` Up brought back; None: the draft being typed."""
        self._typed_draft = ""
        """The draft as typed before Up replaced it, which Down past the newest gives back."""

    def feed(self, keys: str) -> list[Edit]:
        """What the keys of one read did to the draft, in order."""
        edits: list[Edit] = []
        for index, key in enumerate(keys):
            if self.enter_pending:  # more keys at once: that Enter was a pasted line break
                self.enter_pending = False
                edits.append(self._insert("\n"))
            if self._escape or key == ESCAPE:
                edits.extend(self._escape_key(key))
            elif key in ENTER:
                after_cr, self._after_cr = self._after_cr, key == "\r"
                if key == "\n" and after_cr:
                    continue
                if self._pasting or index + 1 < len(keys):
                    edits.append(self._insert("\n"))
                else:
                    self.enter_pending = True
                continue
            elif self._pasting:
                edits.append(self._insert(key))
            else:
                edits.extend(self._key(key))
            self._after_cr = False
        return _joined(edits)

    def commit(self) -> list[Edit]:
        """No key followed the Enter: it sends the draft, unless the draft goes on."""
        if not self.enter_pending:
            return []
        self.enter_pending = False
        if open_fence(self.draft):
            return [self._insert("\n")]
        if self.draft.endswith("\\"):
            return [self._erase(len(self.draft) - 1), self._insert("\n")]
        sent, self.draft = self.draft, ""
        self._recalled = None
        if sent.strip() and (not self._sent or self._sent[-1] != sent):
            self._sent.append(sent)
        return [Sent(sent)]

    def clear(self) -> None:
        """Drop the draft (Ctrl+C), and any paste or escape sequence it was in the middle of:
        a paste cut short never sends its end marker, and keys after it are keys again."""
        self.draft = ""
        self._recalled = None
        self.enter_pending = False
        self._pasting = False
        self._escape = ""

    def _key(self, key: str) -> list[Edit]:
        if key in ERASE_CHAR:
            return [self._erase(len(self.draft) - 1)]
        if key == ERASE_LINE:
            return [self._erase(self.draft.rfind("\n") + 1)]
        if key == ERASE_WORD:
            kept = self.draft.rstrip(" ")
            return [self._erase(len(kept) - len(_last_word(kept)))]
        if key == END_OF_INPUT:
            return [Ended()] if not self.draft else []
        if key == "\t" or key.isprintable():
            return [self._insert(key)]
        return []  # another control key

    def _escape_key(self, key: str) -> list[Edit]:
        self._escape += key
        sequence = self._escape
        if len(sequence) < 2:
            return []
        if sequence[1] == "[":
            if len(sequence) == 2 or not "\x40" <= key <= "\x7e":
                return []  # a control sequence ends with its final byte
        elif sequence[1] == "O" and len(sequence) < 3:
            return []  # SS3: one more key (arrows in application mode)
        self._escape = ""
        if sequence == PASTE_START:
            self._pasting = True
        elif sequence == PASTE_END:
            self._pasting = False
        elif sequence in UP and not self._pasting:
            return self._recall(-1)
        elif sequence in DOWN and not self._pasting:
            return self._recall(+1)
        return []

    def _recall(self, step: int) -> list[Edit]:
        """Up (-1) or Down (+1) through the messages sent: the draft becomes the one reached."""
        if self._recalled is None:
            if step > 0 or not self._sent:
                return []
            self._typed_draft = self.draft
            reached: int | None = len(self._sent) - 1
        else:
            reached = self._recalled + step
            if reached < 0:
                return []
            if reached >= len(self._sent):
                reached = None
        self._recalled = reached
        now = self._typed_draft if reached is None else self._sent[reached]
        return [self._erase(0), self._insert(now)]

    def _insert(self, text: str) -> Typed:
        self.draft += text
        return Typed(text)

    def _erase(self, keep: int) -> Erased:
        keep = max(0, min(keep, len(self.draft)))
        erased = self.draft[keep:]
        self.draft = self.draft[:keep]
        return Erased(erased, self.draft)


def _last_word(text: str) -> str:
    """What Ctrl+W erases after the spaces: the non-space tail of `text`."""
    tail = len(text)
    while tail > 0 and not text[tail - 1].isspace():
        tail -= 1
    return text[tail:]


def _joined(edits: list[Edit]) -> list[Edit]:
    """Edits with consecutive additions (and erasures) joined, to print them at once."""
    joined: list[Edit] = []
    for edit in edits:
        last = joined[-1] if joined else None
        if isinstance(edit, Typed) and isinstance(last, Typed):
            joined[-1] = Typed(last.text + edit.text)
        elif isinstance(edit, Erased) and not edit.text:
            continue
        else:
            joined.append(edit)
    return joined


@contextlib.contextmanager
def keys_mode(fd: int, out: TextIO) -> Iterator[None]:
    """The terminal hands over each key as typed, echoes none, and marks pastes, until the end
    of the block (then it is as it was). Ctrl+C still interrupts."""
    import termios  # here: POSIX only, and the cog imports this package on every platform

    saved = termios.tcgetattr(fd)
    mode = termios.tcgetattr(fd)
    mode[3] &= ~(termios.ICANON | termios.ECHO)
    mode[6][termios.VMIN] = 1
    mode[6][termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, mode)
    try:
        out.write(PASTE_ON)
        out.flush()
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            out.write(PASTE_OFF)
            out.flush()
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
