"""MCP servers the tests start (tests/support/mcp_server.py), and the config file naming them."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROOT_VARIABLE = "MCP_TEST_ROOT"
"""The config names the repository through `${MCP_TEST_ROOT}`, as a bot names a secret."""
SERVER = "tests"


@dataclass(frozen=True)
class McpFolder:
    """Where a test server leaves what it saw (see tests/support/mcp_server.py)."""

    path: Path

    def saw(self, what: str) -> bool:
        return (self.path / what).exists()

    async def wait_for(self, what: str, timeout_s: float = 5.0) -> None:
        async with asyncio.timeout(timeout_s):
            while not self.saw(what):  # noqa: ASYNC110 (another process writes it)
                await asyncio.sleep(0.01)

    @property
    def starts(self) -> int:
        started = self.path / "started"
        return len(started.read_text().splitlines()) if started.exists() else 0


EVERYWHERE: dict[str, object] = {"guilds": ["*"], "dms": True}
"""The `"tomori"` access of the tests' server unless a test says otherwise."""


def stdio_config(tmp_path: Path, access: dict[str, object] | None = None) -> tuple[Path, McpFolder]:
    """A config file with one stdio server named `tests` offered where `access` says (every
    server and DM unless told), and the folder it writes to."""
    folder = tmp_path / "mcp"
    folder.mkdir()
    entry = {
        "command": sys.executable,
        "args": ["-m", "tests.support.mcp_server", "stdio", str(folder)],
        "env": {"PYTHONPATH": f"${{{ROOT_VARIABLE}}}"},
        "tomori": EVERYWHERE if access is None else access,
    }
    return _write(tmp_path, {SERVER: entry}), McpFolder(folder)


DYING_WORDS = ("boom: SEARCH_KEY is not set", "the server cannot start")
DYING_CODE = 3


def exits_at_once(folder: Path) -> dict[str, object]:
    """The entry of a stdio server that says `DYING_WORDS` on stderr and exits with
    `DYING_CODE` at each start, adding a line to `folder`/started first."""
    script = (
        "import sys\n"
        "with open(sys.argv[1], 'a') as started: started.write('x\\n')\n"
        f"for line in {DYING_WORDS!r}: print(line, file=sys.stderr)\n"
        f"sys.exit({DYING_CODE})\n"
    )
    folder.mkdir(exist_ok=True)
    return {"command": sys.executable, "args": ["-c", script, str(folder / "started")]}


@asynccontextmanager
async def http_server(tmp_path: Path) -> AsyncIterator[tuple[Path, McpFolder]]:
    """A Streamable HTTP server named `tests`, running until the block ends, and its config."""
    folder = tmp_path / "mcp"
    folder.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "tests.support.mcp_server", "http", str(folder), str(port)),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with asyncio.timeout(15):
            while True:
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    await asyncio.sleep(0.05)
                    continue
                writer.close()
                await writer.wait_closed()
                break
        entry = {
            "url": f"http://127.0.0.1:{port}/mcp",
            "headers": {"X-Test": f"${{{ROOT_VARIABLE}}}"},
            "tomori": EVERYWHERE,
        }
        yield _write(tmp_path, {SERVER: entry}), McpFolder(folder)
    finally:
        process.kill()
        await process.wait()


def _write(tmp_path: Path, servers: dict[str, object]) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path
