"""What `tomori --console` and `tomori --check` run.

Both read every setting first, as the bot does, so a bad one stops them with exit code 2 and
one line naming it. Neither needs a `DISCORD_TOKEN`; `--check` uses one if it is set.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable

from tomori.config.models import ModelChain
from tomori.config.settings import ConfigError, Settings
from tomori.console.check import run_check
from tomori.console.session import run_console
from tomori.memory.tools import FORGET, REMEMBER
from tomori.providers.base import ToolSpec
from tomori.store import StoreError
from tomori.tools.mcp import mcp_tools_for
from tomori.tools.registry import CURRENT_TIME
from tomori_cog.discord_check import check_discord
from tomori_cog.reading.message_tool import READ_MESSAGE
from tomori_cog.variables import refusal, shards_without_a_shared_database, unread_variables

CONSOLE_HELP = "chat with the bot in this terminal, without Discord (no DISCORD_TOKEN needed)"
CHECK_HELP = (
    "check the settings, the database and every model (with DISCORD_TOKEN, the login, "
    "the Message Content intent and an invite URL), then exit: 0 if all is well"
)
INTERRUPTED = 130
"""The exit code of a process ended by Ctrl+C, as shells report it."""


def console_main() -> int:
    """The console on this terminal (or on piped input) until the end of input or Ctrl+C."""
    return _run(check=False)


def check_main(check_more: Callable[[], object] = lambda: None) -> int:
    """The settings, the database, every model and, with a token, Discord: 0 if all is well.

    `check_more` checks the front-end's own settings (the command's shards and Discord
    address), raising `ConfigError`."""
    return _run(check=True, check_more=check_more)


def _run(*, check: bool, check_more: Callable[[], object] = lambda: None) -> int:
    try:
        check_more()
        settings = Settings.from_env()
        chain = ModelChain.from_env()
        mcp_tools_for(settings, os.environ)  # a bad TOMORI_MCP_CONFIG file stops here
    except ConfigError as error:
        print(refusal(error, os.environ), file=sys.stderr)
        return 2
    token = os.environ.get("DISCORD_TOKEN", "").strip()
    try:
        if check:
            logging.getLogger().addHandler(logging.NullHandler())  # the report says it all
            return asyncio.run(
                run_check(
                    settings,
                    chain,
                    sys.stdout,
                    lambda out: check_discord(token, out),
                    unread=unread_variables(os.environ),
                    warnings=[
                        line
                        for line in [shards_without_a_shared_database(os.environ, settings)]
                        if line
                    ],
                    builtin=builtin_tools(settings),
                )
            )
        for line in unread_variables(os.environ):  # before the chat, which would hide it
            print(f"note: {line}", file=sys.stderr, flush=True)
        return asyncio.run(run_console(settings, chain))
    except (StoreError, ConfigError) as error:  # ConfigError: TOMORI_METRICS_ADDR's port taken
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return INTERRUPTED


def builtin_tools(settings: Settings) -> tuple[ToolSpec, ...]:
    """The cog's built-in tools `TOMORI_TOOLS` names, as a turn in a channel offers them (the
    memory tools where `TOMORI_MEMORIES` is on)."""
    builtin = (CURRENT_TIME.spec, READ_MESSAGE, *((REMEMBER, FORGET) if settings.memories else ()))
    return tuple(tool for tool in builtin if tool.name in settings.tools)
