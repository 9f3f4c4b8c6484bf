"""`tomori --console` and `--check` as a newcomer runs them: a real process on the local LLM
server.

The process runs in the test's event loop as an asyncio subprocess, so the LLM server the
test scripted (in the same loop) answers it while the test writes lines and reads output.
"""

from __future__ import annotations

import asyncio
import os
import pty
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.support.command import COMMAND, environment
from tests.support.llm_server import LLMServer
from tests.support.terminal_screen import on_screen

SECRET_KEY = "sk-test-SECRET-0123456789abcdef"
"""The key every process is given: no output may ever show it."""

FAST_BUDGETS = {
    "STREAM_FIRST_TOKEN_TIMEOUT_MS": "1000",
    "STREAM_SDK_CALL_TIMEOUT_MS": "1000",
    "STREAM_ABANDONED_SETTLE_TIMEOUT_MS": "100",
}


def bot_environment(server: LLMServer, tmp_path: Path, **env: str) -> dict[str, str]:
    """A newcomer's configuration: one OpenAI-compatible local server, short budgets."""
    newcomer = {
        "TOMORI_MODELS": "openai:test-model",
        "OPENAI_API_KEY": SECRET_KEY,
        "OPENAI_BASE_URL": f"{server.base_url}/v1",
        "TOMORI_DB_PATH": str(tmp_path / "tomori.db"),
        **FAST_BUDGETS,
    }
    return environment(**{**newcomer, **env})


async def start_bot(*args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    """bot.py with `args`, its standard input, output and error piped to the test."""
    return await asyncio.create_subprocess_exec(
        *COMMAND,
        *args,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def finished(
    process: asyncio.subprocess.Process, stdin: bytes | None = None, within_s: float = 30
) -> tuple[str, str]:
    """Standard output and error once the process ended (killed if it overran `within_s`)."""
    try:
        async with asyncio.timeout(within_s):
            out, err = await process.communicate(stdin)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return out.decode(), err.decode()


async def read_until(process: asyncio.subprocess.Process, text: str, within_s: float = 20) -> str:
    """What the process printed up to and including the line that holds `text`."""
    assert process.stdout is not None
    seen = ""
    async with asyncio.timeout(within_s):
        while text not in seen:
            line = await process.stdout.readline()
            if not line:
                raise AssertionError(f"output ended before {text!r}: {seen!r}")
            seen += line.decode()
    return seen


async def type_line(process: asyncio.subprocess.Process, line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(line.encode() + b"\n")
    await process.stdin.drain()


async def leave(process: asyncio.subprocess.Process, terminal: int, keys: bytes = b"\x04") -> None:
    """Ctrl+D (or `keys`) at the terminal, and the console is gone, with exit code 0."""
    os.write(terminal, keys)
    async with asyncio.timeout(10):
        await process.wait()
    assert process.returncode == 0


@asynccontextmanager
async def console_in_terminal(
    env: dict[str, str],
) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    """`tomori --console` on a pty, as a person at a terminal runs it; the terminal's side of it.

    The process is killed if the test left it running, and the pty closed."""
    terminal, console_side = pty.openpty()
    os.set_blocking(terminal, False)
    process = await asyncio.create_subprocess_exec(
        *COMMAND,
        "--console",
        env=env,
        stdin=console_side,
        stdout=console_side,
        stderr=subprocess.PIPE,
    )
    os.close(console_side)
    try:
        yield process, terminal
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        os.close(terminal)


async def read_terminal(fd: int, text: str, seen: list[str], within_s: float = 20) -> None:
    """Read the terminal's side of a pty into `seen[0]` (line ends plain) until `text` shows
    on the screen (`on_screen`: the typing line gone, backspaces applied)."""
    try:
        await _read_terminal(fd, text, seen, within_s)
    except TimeoutError:
        raise AssertionError(f"{text!r} did not show within {within_s} s: {seen[0]!r}") from None


async def _read_terminal(fd: int, text: str, seen: list[str], within_s: float) -> None:
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(within_s):
        while text not in on_screen(seen[0]):
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, readable.set_result, None)
            try:
                await readable
            finally:
                loop.remove_reader(fd)
            seen[0] += os.read(fd, 65_536).decode().replace("\r\n", "\n")
