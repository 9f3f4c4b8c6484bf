"""bot.py as the tests use it: run as a process, or loaded as a module to call its functions."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from types import ModuleType

from tests.support.paths import REPO

BOT = REPO / "bot.py"


def environment(**env: str) -> dict[str, str]:
    """This process's environment without its TOMORI_ and DISCORD_ variables, plus `env`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TOMORI_", "DISCORD_"))}
    return {**clean, **env}


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """bot.py with `args`, in `environment(**env)`."""
    return subprocess.run(
        [sys.executable, str(BOT), *args],
        capture_output=True,
        text=True,
        env=environment(**env),
        timeout=60,
        check=False,
    )


def bot_script() -> ModuleType:
    """bot.py as a module, to call its functions."""
    spec = importlib.util.spec_from_file_location("bot_script", BOT)
    assert spec is not None
    assert spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script
