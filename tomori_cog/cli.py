"""The `tomori` command (and `python -m tomori_cog`): run the bot, or `--console`, or `--check`.

Every mode reads every setting first, so a bad one stops it with exit code 2 and one line
naming it. The run mode runs a bot of the installed Discord library (`serving.py`); the
console and the check are `modes.py`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import sys
import threading
from collections.abc import Coroutine
from typing import Any

from tomori.config.models import ModelChain
from tomori.config.parsers import install_extra
from tomori.config.settings import ConfigError, Settings
from tomori.log_lines import log_handler
from tomori.store import StoreError
from tomori.tools.mcp import mcp_tools_for
from tomori_cog.library import installed_library
from tomori_cog.modes import CHECK_HELP, CONSOLE_HELP, check_main, console_main
from tomori_cog.serving import check_database, point_at, run_bot
from tomori_cog.variables import (
    Shards,
    api_base_from_env,
    environment_help,
    refusal,
    shards_without_a_shared_database,
)

TOKEN_HELP = (
    "DISCORD_TOKEN is not set: create an application at "
    "https://discord.com/developers/applications, add a bot with the Message Content intent, "
    "and run DISCORD_TOKEN=<its token> tomori (or try it first in this terminal: "
    "tomori --console)"
)
INTENT_HELP = (
    "Discord refused the gateway connection (4014): the bot needs the Message Content intent; "
    "turn it on at https://discord.com/developers/applications, in the application's "
    "Bot > Privileged Gateway Intents"
)
NO_LIBRARY = (
    f"the bot runs on nextcord or discord.py, and neither is installed: {install_extra('nextcord')}"
)


def check_command_settings() -> None:
    """The command's own settings, as its start reads them (`ConfigError` naming a bad one);
    the check then logs in where the bot would."""
    Shards.from_env(os.environ)
    point_at(installed_library(), api_base_from_env(os.environ))


def main(argv: list[str] | None = None) -> int:
    """The command with `argv` (the process's own by default); its exit code."""
    parser = argparse.ArgumentParser(
        prog="tomori",
        description="A Discord bot whose LLM chat never hangs (tomori-cog on nextcord or "
        "discord.py, whichever is installed).",
        epilog=environment_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--console", action="store_true", help=CONSOLE_HELP)
    modes.add_argument("--check", action="store_true", help=CHECK_HELP)
    args = parser.parse_args(argv)
    if args.console or args.check:
        return check_main(check_command_settings) if args.check else console_main()
    token = os.environ.get("DISCORD_TOKEN", "").strip()
    if not token:
        print(f"error: {TOKEN_HELP}", file=sys.stderr)
        return 2
    library = installed_library()
    if library is None:
        print(f"error: {NO_LIBRARY}", file=sys.stderr)
        return 2
    try:
        shards = Shards.from_env(os.environ)
        api_base = api_base_from_env(os.environ)
        settings = Settings.from_env()
        ModelChain.from_env()
        mcp_tools_for(settings, os.environ)  # a bad TOMORI_MCP_CONFIG file stops here
        asyncio.run(check_database(settings))
    except (ConfigError, StoreError) as error:
        print(refusal(error, os.environ), file=sys.stderr)
        return 2

    logging.basicConfig(level=logging.INFO, handlers=[log_handler(settings.log_format)])
    logging.getLogger(f"{library}.client").addFilter(without_the_voice_warning)
    shared = shards_without_a_shared_database(os.environ, settings)
    if shared:
        logging.getLogger(__name__).warning("%s", shared)
    discord: Any = importlib.import_module(library)
    try:
        run_without_waiting_for_threads(run_bot(library, token, shards, api_base, settings))
    except discord.LoginFailure:
        print("error: Discord refused the token (401): check DISCORD_TOKEN", file=sys.stderr)
        return 2
    except discord.PrivilegedIntentsRequired:
        print(f"error: {INTENT_HELP}", file=sys.stderr)
        return 2
    except ConfigError as error:  # TOMORI_METRICS_ADDR's port taken, say
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # aiohttp's connection errors, a failed DNS lookup among them
        print(f"error: could not reach Discord: {error}", file=sys.stderr)
        return 1
    return 0


def without_the_voice_warning(record: logging.LogRecord) -> bool:
    """Drop the library's "PyNaCl is not installed, voice will NOT be supported" (and
    discord.py's like line for davey) from the log: this bot only writes, so it says nothing on
    every start but that a library it never needs is missing, which reads like a fault to
    whoever watches the log."""
    return "is not installed, voice will NOT be supported" not in record.getMessage()


def run_without_waiting_for_threads(main: Coroutine[Any, Any, None]) -> None:
    """`asyncio.run(main)`, except that the end does not wait for the loop's worker threads.

    A DNS lookup runs in the loop's default executor, and a resolver that does not answer
    keeps its thread blocked in `getaddrinfo` for as long as it likes (30 s, say) with no way
    to stop it; `asyncio.run` would wait for that thread before returning. Once the bot and
    the cog are closed nothing of ours runs there, so the executor is shut down without waiting.
    """
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(main)
    finally:
        try:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:  # an empty gather would look for a current loop, and there is none
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()  # shuts the default executor down without waiting for its threads


def exit_now_if_threads_are_left(code: int) -> None:
    """End the process with `code` even if a worker thread is still blocked (a DNS lookup).

    The interpreter joins every executor thread at exit, which would wait for that lookup.
    Everything of ours is closed by now, so what is written is flushed and the process ends
    without joining them. Only the command may do so: a library must never end its process.
    """
    if threading.active_count() > 1:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def entry() -> None:
    """The console script's entry point: the command, then the process's end with its code."""
    code = main()
    exit_now_if_threads_are_left(code)
    sys.exit(code)
