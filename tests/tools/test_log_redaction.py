"""The log's redaction of secrets: every record the process makes, while one is installed."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tomori.config.mcp_servers import load_servers
from tomori.tools.log_redaction import LogRedaction, secrets_of


def test_every_value_a_var_filled_in_a_stdio_servers_args_and_env_is_redacted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A stdio server may echo its arguments or its environment on its stderr: each value the
    author kept out of the file (`${VAR}`) is written as the server's name in a log line,
    whatever logs it; what the file writes itself is not a secret."""
    path = tmp_path / "mcp.json"
    entry = {
        "command": "run-server",
        "args": ["--token=${ARG_SECRET}", "--verbose", "${DIR_SECRET}/repo"],
        "env": {"API_KEY": "${ENV_SECRET}", "LEVEL": "debug"},
    }
    path.write_text(json.dumps({"mcpServers": {"git": entry}}))
    environ = {"ARG_SECRET": "arg-5678", "DIR_SECRET": "/home/author", "ENV_SECRET": "env-1234"}
    (config,) = load_servers(path, environ)
    assert secrets_of([config]) == {
        "arg-5678": "<mcp server git>",
        "/home/author": "<mcp server git>",
        "%2Fhome%2Fauthor": "<mcp server git>",  # as a client that encodes it would log it
        "env-1234": "<mcp server git>",
    }
    redaction = LogRedaction(secrets_of([config]))
    redaction.install()
    try:
        with caplog.at_level(logging.INFO):
            logging.getLogger("mcp.stderr").info(
                "started with --token=arg-5678 --verbose /home/author/repo, key env-1234, debug"
            )
    finally:
        redaction.remove()
    assert caplog.messages == [
        "started with --token=<mcp server git> --verbose <mcp server git>/repo, "
        "key <mcp server git>, debug"
    ]
    assert logging.getLogRecordFactory() is logging.LogRecord


def test_a_pattern_is_redacted_with_what_its_replacement_keeps(
    caplog: pytest.LogCaptureFixture,
) -> None:
    redaction = LogRedaction(patterns={r"(key=)\w+": r"\g<1><key>"})
    redaction.install()
    try:
        with caplog.at_level(logging.INFO):
            logging.getLogger("any").info("GET /x?key=%s failed", "abc123")
            try:
                raise RuntimeError("refused key=abc123")
            except RuntimeError:
                logging.getLogger("any").exception("and then")
    finally:
        redaction.remove()
    assert caplog.messages == ["GET /x?key=<key> failed", "and then"]
    assert "abc123" not in caplog.text
    assert "refused key=<key>" in caplog.text  # the traceback too
