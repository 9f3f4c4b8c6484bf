"""The console channel's drawing of the draft at the prompt, on a terminal of a known width."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import termios
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from tomori.console.channel import ConsoleChannel


@contextmanager
def terminal_of(columns: int) -> Iterator[tuple[TextIO, int]]:
    """A pty `columns` wide: the console's side to write to, and the terminal's to read."""
    terminal, console_side = pty.openpty()
    fcntl.ioctl(console_side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    with os.fdopen(console_side, "w", encoding="utf-8") as out:
        try:
            yield out, terminal
        finally:
            os.close(terminal)


def drawn(terminal: int) -> str:
    """All the terminal has been sent so far (line ends plain)."""
    got = b""
    while select.select([terminal], [], [], 0.2)[0]:
        got += os.read(terminal, 65_536)
    return got.decode().replace("\r\n", "\n")


def test_a_backspace_rubs_out_on_its_row_and_redraws_across_a_wrap() -> None:
    with terminal_of(20) as (out, terminal):
        channel = ConsoleChannel(out, live=True)
        channel.prompt()
        channel.typed("abcdefghij")  # "you #1> " and 10 keys: 18 of 20 columns
        channel.erased("j", "abcdefghi")
        assert drawn(terminal) == "you #1> abcdefghij\b \b"
        channel.typed("jklmn")  # 23 columns: the line wrapped
        channel.erased("lmn", "abcdefghijk")  # back up across the wrap: drawn again below
        assert drawn(terminal) == "jklmn\nyou #1> abcdefghijk"


def test_wide_characters_and_line_breaks_are_drawn_again() -> None:
    with terminal_of(80) as (out, terminal):
        channel = ConsoleChannel(out, live=True)
        channel.prompt()
        channel.typed("語\nx")
        channel.erased("x", "語\n")
        channel.erased("\n", "語")
        channel.erased("語", "")
        assert drawn(terminal) == "you #1> 語\nx\b \b\nyou #1> 語\nyou #1> "
