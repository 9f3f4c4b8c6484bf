"""The `tomori` command as the tests run it: `python -m tomori_cog`, as a process."""

from __future__ import annotations

import os
import subprocess
import sys

COMMAND = (sys.executable, "-m", "tomori_cog")
"""The command as a process: what the `tomori` console script runs, without needing the
venv's scripts (an editable install made before the script existed has none)."""
RUN_COMMAND = "runpy.run_module('tomori_cog', run_name='__main__', alter_sys=True)"
"""The Python line a launcher (`python -c`, patching the world first) ends with to run the
command as `python -m tomori_cog` does; `sys.argv[1:]` are its arguments."""


HIDING = (
    """
import runpy, sys

class NotInstalled:
    # What pip left out: the modules named on the command line cannot be found.
    def find_spec(self, name, path=None, target=None):
        if any(name == hidden or name.startswith(hidden + ".") for hidden in HIDDEN):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

HIDDEN = [name for name in sys.argv[1].split(",") if name]
sys.meta_path.insert(0, NotInstalled())
sys.argv = sys.argv[2:]
"""
    + RUN_COMMAND
)


OTHER_LIBRARY = {"nextcord": "discord", "discordpy": "nextcord"}
"""The Discord library hidden from the command for a test run on `library` (the fixture's
name), so that the command runs on that one: the other is the one it would pick (nextcord),
or the one it must not."""


def command_without(hidden: str, first: str = "") -> list[str]:
    """The command as an install without the modules `hidden` (comma separated; none if
    empty) runs it, as the extras left out leave them, after the Python lines `first` (which
    patch the world): what `COMMAND` is otherwise."""
    return [sys.executable, "-c", f"{first}\n{HIDING}", hidden, "tomori"]


def environment(**env: str) -> dict[str, str]:
    """This process's environment without its TOMORI_ and DISCORD_ variables, plus `env`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TOMORI_", "DISCORD_"))}
    return {**clean, **env}


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command with `args`, in `environment(**env)`."""
    return subprocess.run(
        [*COMMAND, *args],
        capture_output=True,
        text=True,
        env=environment(**env),
        timeout=60,
        check=False,
    )
