"""bot.py, the example a bot author copies: a nextcord bot that loads the extension and runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.command import environment
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # bot.py run as a process

INSTEAD_OF_CONNECTING = """
import runpy, sys
from nextcord.ext import commands

def run(bot, token):  # what bot.py hands to nextcord to serve, printed instead of connected
    print(token, sorted(bot.cogs), bot.intents.message_content, flush=True)

commands.Bot.run = run
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def test_the_example_bot_loads_the_cog_and_runs_with_the_token(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", INSTEAD_OF_CONNECTING, str(REPO / "bot.py")],
        capture_output=True,
        text=True,
        env=environment(
            DISCORD_TOKEN="the-token",
            TOMORI_MODELS="openai:m",
            OPENAI_API_KEY="k",
            TOMORI_DB_PATH=str(tmp_path / "t.db"),
        ),
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "the-token ['Tomori'] True\n"
