"""Lines from standard input, read without blocking the event loop, and stopped at exit.

A thread reads, because standard input may be a terminal, a pipe or a plain file: the loop's
own pipe transport takes no plain file (`tomori --console < questions.txt`), and it
would switch a terminal to non-blocking mode, which the terminal shares with standard output
(a long answer's write could then fail). The thread waits in `select` on standard input and
on a pipe of its own, so `stop` wakes it and joins it: no reader is left blocked at exit.
It reads the file descriptor directly, never `sys.stdin`, whose lock a reader thread still
holding it would keep the interpreter from taking at exit. Piped, `LineReader` hands over
lines; in a terminal, `KeyReader` hands over each read's keys to the line editor.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import select
import threading
import time
from dataclasses import dataclass

READ_SIZE = 65_536


class _Reader:
    """Standard input read in a thread (see the module docstring); `_take` gets each read's
    bytes in the reading thread, then None at the end of input."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake_read, self._wake_write = os.pipe()
        self._thread = threading.Thread(target=self._read, name="tomori-console-input", daemon=True)
        self._stopped = False

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread.start()

    def stop(self) -> None:
        """Wake the reader, wait for it to end, and close its pipe; once."""
        if self._stopped:
            return
        self._stopped = True
        os.write(self._wake_write, b"x")
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)
        os.close(self._wake_read)
        os.close(self._wake_write)

    def _read(self) -> None:
        while True:
            ready, _, _ = select.select([self._fd, self._wake_read], [], [])
            if self._wake_read in ready:
                return
            try:
                chunk = os.read(self._fd, READ_SIZE)
            except OSError:
                chunk = b""
            self._take(chunk or None)
            if not chunk:
                return

    def _take(self, chunk: bytes | None) -> None:
        raise NotImplementedError

    def _hand_over[T](self, queue: asyncio.Queue[T], item: T) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody reads any more
            self._loop.call_soon_threadsafe(queue.put_nowait, item)


class LineReader(_Reader):
    """Lines of `fd` (decoded, without their line end), then None at the end of input."""

    def __init__(self, fd: int = 0) -> None:
        super().__init__(fd)
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._pending = b""

    async def next_line(self) -> str | None:
        """The next line typed or piped in; None once input has ended."""
        return await self._lines.get()

    def _take(self, chunk: bytes | None) -> None:
        if chunk is None:
            if self._pending:
                self._hand_over(self._lines, self._decoded(self._pending))
            self._hand_over(self._lines, None)
            return
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        for line in lines:
            self._hand_over(self._lines, self._decoded(line))

    @staticmethod
    def _decoded(line: bytes) -> str:
        return line.decode("utf-8", "replace").rstrip("\r")


@dataclass(frozen=True, slots=True)
class Keys:
    """One read of a terminal: its text, and when it was read (`time.monotonic`), so whether
    keys came together is judged by when they came, never by when the loop got to them."""

    text: str
    at: float


class KeyReader(_Reader):
    """What a terminal sends, a read at a time (keys, or a paste at once), then None at the
    end of input. A character cut between two reads comes whole with the second."""

    def __init__(self, fd: int = 0) -> None:
        super().__init__(fd)
        self._reads: asyncio.Queue[Keys | None] = asyncio.Queue()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    async def next_keys(self, within_s: float | None = None) -> Keys | None:
        """The next read; None at the end of input. `TimeoutError` if nothing came within
        `within_s` seconds."""
        async with asyncio.timeout(within_s):
            return await self._reads.get()

    def _take(self, chunk: bytes | None) -> None:
        at = time.monotonic()
        text = self._decoder.decode(chunk or b"", final=chunk is None)
        if text:
            self._hand_over(self._reads, Keys(text, at))
        if chunk is None:
            self._hand_over(self._reads, None)


FENCE = "```"


class MessageLines:
    """Lines gathered into messages: a line that opens a code fence goes on until it closes.

    A terminal sends a line at a time, but a message with a code block is many lines; pasted
    or typed, the block arrives whole, as one message, as it would be posted in Discord. A
    line ending in a backslash goes on too (the backslash dropped), for any other text.
    """

    def __init__(self) -> None:
        self._pending: list[str] = []

    @property
    def open(self) -> bool:
        """Whether a message is begun and waits for more lines."""
        return bool(self._pending)

    def add(self, line: str) -> str | None:
        """The message `line` completes, or None while it goes on."""
        continues = line.endswith("\\") and not self._in_fence(line)
        self._pending.append(line[:-1] if continues else line)
        if continues or self._in_fence():
            return None
        return self.flush()

    def flush(self) -> str | None:
        """What is gathered, ended as it stands (at the end of input); None if nothing."""
        message, self._pending = "\n".join(self._pending), []
        return message or None

    def _in_fence(self, more: str = "") -> bool:
        return open_fence("\n".join((*self._pending, more)))


def open_fence(text: str) -> bool:
    """Whether `text` opens a code fence it does not close: a message that goes on."""
    return text.count(FENCE) % 2 == 1


def trimmed(message: str) -> str:
    """A message as it is sent: without the blank lines around it or the spaces it ends with,
    but with its first line's indentation (a pasted block keeps its shape)."""
    lines = message.rstrip().split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines)
