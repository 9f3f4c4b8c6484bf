"""bot.py --console and --check as a newcomer runs them: a real process on the local LLM server.

The process runs in the test's event loop as an asyncio subprocess, so the LLM server the
test scripted (in the same loop) answers it while the test writes lines and reads output.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from tests.support.bot_script import BOT, environment
from tests.support.llm_server import LLMServer

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
        sys.executable,
        str(BOT),
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
