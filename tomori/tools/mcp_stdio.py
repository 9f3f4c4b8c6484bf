"""One start of a stdio MCP server: its standard error to the log, and how its process ended.

A server writes its own logs, and its dying words, on stderr. Inherited, they went raw into the
bot's terminal (in the console, glued to its lines; in `--check`, into the report). Each start
gets a pipe of its own instead: every line goes to the server's own logger (`tomori.mcp.NAME`,
at INFO), prefixed by its name, cut at `LINE_CHARS`, at most `LINES_PER_MINUTE` a minute (the
rest counted in one line); the last `LAST_LINES` are kept, for the one report of a server
that exits (`McpServer`).

The SDK's `stdio_client` owns the process and shows it to no caller, so its exit code is read
where the SDK spawns it (`_create_platform_compatible_process`, in every 2.x release): a
spawn made within `StdioRun.connected` is handed to that run. An SDK without that function
still runs servers; it is only not said with which exit code one ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from mcp import StdioServerParameters

LINE_CHARS = 500
"""A line of a server's stderr is logged up to this many characters."""
LINES_PER_MINUTE = 120
"""A chatty server's stderr fills no log: past this many lines a minute, the rest are counted."""
LAST_LINES = 5
"""The lines of stderr a server's exit is reported with."""
DRAIN_S = 1.0
"""After the process ended: the most its last lines are waited for (a child it left may hold
the pipe open)."""

_SPAWNED: ContextVar[list[Any] | None] = ContextVar("tomori_mcp_spawned", default=None)


class StdioRun:
    """One start of a stdio server (see the module docstring): `connected` is its transport;
    after it, `ended` says how the process ended and `last_lines` what it said last."""

    def __init__(self, name: str, redact: Callable[[str], str]) -> None:
        self.name = name
        self._lines = _StderrLines(logging.getLogger(f"tomori.mcp.{name}"), name, redact)
        self._process: Any = None

    @property
    def last_lines(self) -> tuple[str, ...]:
        return tuple(self._lines.last)

    @property
    def ended(self) -> str:
        """How its process ended, in words ("exited with code 3", "was ended by signal 9"),
        or "" while it runs or when it is not known."""
        code = getattr(self._process, "returncode", None)
        if code is None:
            return ""
        if code < 0:
            try:
                named = f" ({signal.Signals(-code).name})"
            except ValueError:
                named = ""
            return f"was ended by signal {-code}{named}"
        return f"exited with code {code}"

    @contextlib.asynccontextmanager
    async def connected(self, parameters: StdioServerParameters) -> AsyncIterator[tuple[Any, Any]]:
        """The SDK's stdio transport, the process's stderr going to the log."""
        from mcp.client.stdio import stdio_client

        _watch_spawns()
        loop = asyncio.get_running_loop()
        read_fd, write_fd = os.pipe()
        reading = os.fdopen(read_fd, "rb", buffering=0)
        errlog: TextIO = os.fdopen(write_fd, "w")
        try:
            transport, _ = await loop.connect_read_pipe(lambda: self._lines, reading)
        except BaseException:
            reading.close()
            errlog.close()
            raise
        spawned: list[Any] = []
        token = _SPAWNED.set(spawned)
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    streams = await stack.enter_async_context(stdio_client(parameters, errlog))
                finally:
                    _SPAWNED.reset(token)
                    errlog.close()  # the child's copy alone: the pipe ends with the process
                    self._process = spawned[0] if spawned else None
                yield streams
        finally:
            try:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(DRAIN_S):
                        await self._lines.done.wait()
            finally:
                transport.close()
                self._lines.flush()


class _StderrLines(asyncio.Protocol):
    """The read end of a server's stderr: each line logged (bounded), the last ones kept."""

    def __init__(self, log: logging.Logger, name: str, redact: Callable[[str], str]) -> None:
        self._log = log
        self._name = name
        self._redact = redact
        self._buffer = bytearray()
        self._skipping = False
        """A line past `LINE_CHARS` was logged cut: the rest of it is dropped."""
        self._window_at = time.monotonic()
        self._logged = 0
        self._unlogged = 0
        self.last: deque[str] = deque(maxlen=LAST_LINES)
        self.done = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if self._skipping:
                self._skipping = False
            else:
                self._line(line)
        if len(self._buffer) > 4 * LINE_CHARS:  # a line with no end in sight: its start is said
            if not self._skipping:
                self._line(bytes(self._buffer))
            self._skipping = True
            self._buffer.clear()

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.flush()
        self.done.set()

    def flush(self) -> None:
        """A last line without its end, and the count of lines the bound kept from the log."""
        if self._buffer and not self._skipping:
            self._line(bytes(self._buffer))
        self._buffer.clear()
        self._say_unlogged()

    def _line(self, raw: bytes) -> None:
        text = self._redact(raw.decode("utf-8", "replace").rstrip("\r")[:LINE_CHARS])
        if not text.strip():
            return
        self.last.append(text)
        now = time.monotonic()
        if now - self._window_at >= 60:
            self._say_unlogged()
            self._window_at, self._logged = now, 0
        if self._logged >= LINES_PER_MINUTE:
            self._unlogged += 1
            return
        self._logged += 1
        self._log.info("[%s] %s", self._name, text)

    def _say_unlogged(self) -> None:
        if self._unlogged:
            self._log.info(
                "[%s] %d more lines of its stderr not logged (at most %d a minute)",
                self._name,
                self._unlogged,
                LINES_PER_MINUTE,
            )
            self._unlogged = 0


def _watch_spawns() -> None:
    """Hand each process the SDK spawns within `StdioRun.connected` to that run (once per
    process; see the module docstring)."""
    from mcp.client import stdio

    spawn = getattr(stdio, "_create_platform_compatible_process", None)
    if spawn is None or getattr(spawn, "tomori_watched", False):
        return

    async def watched(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        taken = _SPAWNED.get()
        if taken is not None:
            taken.append(process)
        return process

    watched.tomori_watched = True  # type: ignore[attr-defined]
    stdio._create_platform_compatible_process = watched
