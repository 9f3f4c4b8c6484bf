"""A stdio MCP server's stderr, as the log keeps it: each line by the server's own logger,
prefixed by its name, and bounded, however much a server writes."""

from __future__ import annotations

import logging
import sys

import pytest

from tests.support.waiting import until
from tomori.config.mcp_servers import McpServerConfig
from tomori.tools.mcp_server import McpServer
from tomori.tools.mcp_stdio import LAST_LINES, LINE_CHARS, LINES_PER_MINUTE

FLOOD = f"""
import sys
print("x" * {10 * LINE_CHARS}, file=sys.stderr)
for n in range({LINES_PER_MINUTE + 30}):
    print(f"line {{n}} of the key sk-SECRET-KEY", file=sys.stderr)
sys.exit(1)
"""


async def test_a_servers_stderr_is_logged_line_by_line_bounded_and_without_its_secrets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = McpServerConfig(
        "noisy", command=sys.executable, args=("-c", FLOOD), env={"KEY": "sk-SECRET-KEY"}
    )
    server = McpServer(config, call_timeout_s=5)
    with caplog.at_level(logging.INFO):
        server.start()
        try:
            await until(lambda: bool(server.last_failure))
        finally:
            await server.aclose()
    said = [r.getMessage() for r in caplog.records if r.name == "tomori.mcp.noisy"]
    assert said[0] == "[noisy] " + "x" * LINE_CHARS  # cut
    assert said[1] == "[noisy] line 0 of the key …"
    assert len(said) == LINES_PER_MINUTE + 1
    assert said[-1] == (
        f"[noisy] 31 more lines of its stderr not logged (at most {LINES_PER_MINUTE} a minute)"
    )
    assert server.last_failure == "it exited with code 1 as it started"
    assert server.last_words == tuple(
        f"line {n} of the key …"
        for n in range(LINES_PER_MINUTE + 30 - LAST_LINES, LINES_PER_MINUTE + 30)
    )
    assert "sk-SECRET-KEY" not in caplog.text
