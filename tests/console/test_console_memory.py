"""Memories in `python bot.py --console`: the model's remember is told in the terminal, a later
turn is shown it, and `/memory` lists (a page at a time), exports and forgets it as the slash
command does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.console_process import bot_environment, finished, start_bot
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer, tool_call

pytestmark = pytest.mark.slow  # bot.py --console run as a process


async def test_the_console_remembers_shows_and_forgets_as_a_channel_does(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    remember = json.dumps({"text": "The user's cat is called Mochi"})
    llm_server.script(
        tool_call("remember", remember), answer("Noted."), answer("Mochi."), answer("No idea.")
    )
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    lines = (
        "my cat is called Mochi, remember it\n"
        "what is my cat called?\n"
        "/memory list\n"
        "/memory list page:2\n"
        "/memory export\n"
        "/memory forget-all\n"
        "what is my cat called?\n"
    )
    out, err = await finished(process, lines.encode())
    assert process.returncode == 0, err
    assert "Remembered" in out
    assert "The user's cat is called Mochi" in json.dumps(llm_server.requests[2].body)
    assert out.count("The user's cat is called Mochi") >= 3  # the save, the list, the export
    assert "There is no page 2: the last is page 1." in out  # the slash command's page option
    assert "1 memories forgotten" in out
    assert "The user's cat is called Mochi" not in json.dumps(llm_server.requests[3].body)
