"""What a person sees of a terminal's output: the text left once the cursor moves are applied.

The console draws in a terminal with a few controls: a carriage return and "erase to the end of
the line" take the typing line away, backspaces rub out a character, and bracketed paste is
switched on and off. A test reads the raw bytes of a pty; `on_screen` applies those controls to
a grid of lines (as wide as it needs, never wrapping; a blank written stays a blank, so a
prompt keeps its space), so the test asserts what a person reads,
and an unknown control sequence fails the test instead of passing unseen.
"""

from __future__ import annotations

import re

_SEQUENCE = re.compile(r"\x1b\[(\??[0-9;]*)([A-Za-z~])")
_IGNORED = {("?2004", "h"), ("?2004", "l")}
"""Bracketed paste on and off: nothing to see."""


def on_screen(raw: str) -> str:
    """The lines the terminal shows after `raw` (line ends as \\n, as a pty's \\r\\n read)."""
    lines: list[list[str]] = [[]]
    row = column = 0
    index = 0
    while index < len(raw):
        character = raw[index]
        if character == "\x1b":
            found = _SEQUENCE.match(raw, index)
            if found is None:
                raise AssertionError(f"an unknown escape at {raw[index : index + 12]!r}")
            parameters, final = found.groups()
            if final == "K" and parameters in ("", "0"):
                del lines[row][column:]
            elif (parameters, final) not in _IGNORED:
                raise AssertionError(f"an unexpected control sequence {found.group()!r}")
            index = found.end()
            continue
        if character == "\n":
            row += 1
            column = 0
            if row == len(lines):
                lines.append([])
        elif character == "\r":
            column = 0
        elif character == "\b":
            column = max(0, column - 1)
        else:
            line = lines[row]
            line.extend(" " * (column - len(line)))
            if column < len(line):
                line[column] = character
            else:
                line.append(character)
            column += 1
        index += 1
    return "\n".join("".join(line) for line in lines)
