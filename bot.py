"""Run a nextcord bot with tomori-cog: `DISCORD_TOKEN=... python bot.py` (`--help` for more)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import Any

from tomori.config.models import ModelChain
from tomori.config.parsers import install_extra, installed
from tomori.config.settings import ConfigError, Settings
from tomori.monitoring.serving import serving_metrics
from tomori.store import StoreError
from tomori.store.connect import open_database
from tomori.tools.mcp import mcp_tools_for
from tomori_cog.cogs.shared import COG_NAME
from tomori_cog.modes import CHECK_HELP, CONSOLE_HELP, check_main, console_main
from tomori_cog.readiness import readiness_of
from tomori_cog.variables import (
    Shards,
    api_base_from_env,
    environment_help,
    refusal,
    shards_without_a_shared_database,
)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
CLOSE_WITHIN_S = 6.0
"""How long a stop signal leaves the cog and the bot to close, at most: well inside a service
manager's stop timeout (Docker waits 10 s before it kills). A healthy close takes milliseconds;
only a database that stopped answering makes it wait."""
COG_CLOSE_WITHIN_S = 5.0
"""The cog's share of it: time for every turn it runs to hand its channel on (a turn cut before
it showed anything goes back to its queue's head) while the database is slow. Whatever a close
cut short is not lost either: the processes still running, or the next start, replay a turn
that showed nothing. The rest is kept for the bot's own close, which must run whatever the cog
did, or the gateway and HTTP session leak."""

TOKEN_HELP = (
    "DISCORD_TOKEN is not set: create an application at "
    "https://discord.com/developers/applications, add a bot with the Message Content intent, "
    "and run DISCORD_TOKEN=<its token> python bot.py (or try it first in this terminal: "
    "python bot.py --console)"
)


async def check_database(settings: Settings) -> None:
    """Open and migrate the database before connecting, so a bad file stops start-up here."""
    database = await open_database(settings)
    await database.close()


def freeze_start_up_heap(bot: Any) -> None:
    """Once the cog has started, move everything alive then out of the garbage collector's way.

    Every full collection walks every object the process tracks: the imported libraries alone
    (nextcord, the provider SDK) are over 100k objects, a pause of 100 ms or more on a small
    machine, and while it runs no stream is read and no timeout fires. What exists once the
    bot is ready lives as long as the process, so it is frozen (`gc.freeze`), once: a second
    freeze on a reconnect would also freeze turns in flight, and leak what of them is cyclic.
    """
    frozen = False

    async def freeze() -> None:
        nonlocal frozen
        if frozen:
            return
        frozen = True
        cog = bot.get_cog("Tomori")
        if cog is not None:
            await cog.chat.ensure_started()  # the provider SDKs are imported by now
        gc.collect()
        gc.freeze()

    bot.add_listener(freeze, "on_ready")


async def serve(bot: Any, token: str) -> None:
    """Run the bot until it stops by itself or SIGTERM or SIGINT arrives, then close it.

    nextcord's own `bot.run` closes the bot on SIGTERM but leaves its connecting task to run
    on: a bot still logging in or connecting (a gateway or network that does not answer) went
    on waiting for the library's own timeout, about 30 s, before it exited. Here a signal
    cancels whatever the bot is doing, in any phase, and `close_bot` bounds the rest.
    """
    loop = asyncio.get_running_loop()
    signalled = asyncio.Event()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, signalled.set)
    running = asyncio.create_task(bot.start(token), name="bot.start")
    waiting = asyncio.create_task(signalled.wait(), name="stop signal")
    try:
        await asyncio.wait({running, waiting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
        if signalled.is_set():
            logging.getLogger(__name__).info("stop signal received: closing")
        await close_bot(bot)
        running.cancel()
        await asyncio.gather(running, waiting, return_exceptions=True)
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
    if not running.cancelled():
        running.result()  # raises what stopped the bot by itself: a refused token, say


async def close_bot(bot: Any) -> None:
    """Close the cog (its turns end and release their locks), then the bot; within a second.

    The cog is closed first and awaited, while the bot can still reach Discord: nextcord's
    unload only starts the cog's close as a task, which the loop's end would cancel.
    """
    cog = bot.get_cog(COG_NAME)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CLOSE_WITHIN_S
    try:
        if cog is not None:
            await _within(cog.chat.close(), COG_CLOSE_WITHIN_S, "the cog")
    finally:
        await _within(bot.close(), deadline - loop.time(), "the connection to Discord")


async def _within(closing: Coroutine[Any, Any, None], seconds: float, what: str) -> None:
    """Await `closing` for at most `seconds`; past that, say so and go on exiting."""
    try:
        async with asyncio.timeout(seconds):
            await closing
    except TimeoutError:
        logging.getLogger(__name__).warning(
            "closing %s took over %.1f s: exiting anyway (the next start recovers its locks)",
            what,
            seconds,
        )


def build_bot(shards: Shards, api_base: str | None = None) -> Any:
    """The nextcord bot with the cog loaded; call it inside the running loop.

    With shards, nextcord's `AutoShardedBot` runs the ones given in this one process (all
    of them without ids); without, today's plain `Bot`, whose one connection is all a bot
    below Discord's sharding threshold needs (an `AutoShardedBot` would ask Discord for a
    count, and could open several connections the operator never chose).
    """
    import nextcord
    from nextcord.ext import commands

    point_at(api_base)
    intents = nextcord.Intents.default()
    intents.message_content = True
    bot: commands.Bot | commands.AutoShardedBot
    if shards.shard_count is None:
        bot = commands.Bot(intents=intents)
    else:
        ids = None if shards.shard_ids is None else list(shards.shard_ids)
        bot = commands.AutoShardedBot(
            intents=intents, shard_count=shards.shard_count, shard_ids=ids
        )
    bot.load_extension("cogs.tomori")  # nextcord syncs the slash commands when it connects
    freeze_start_up_heap(bot)
    return bot


def point_at(api_base: str | None) -> None:
    """Send every REST call of nextcord, webhooks included, to `api_base` (a rate-limit proxy
    in front of the bot's processes), if one is given."""
    if api_base is not None and installed("nextcord"):
        import nextcord

        nextcord.http.Route.BASE = api_base


def check_bot_settings() -> None:
    """bot.py's own settings, as its start reads them (`ConfigError` naming a bad one); the
    check then logs in where the bot would."""
    Shards.from_env(os.environ)
    point_at(api_base_from_env(os.environ))


async def run_bot(token: str, shards: Shards, api_base: str | None, settings: Settings) -> None:
    """The bot until it stops, with /metrics, /healthz and /readyz served for as long as the
    process runs if `TOMORI_METRICS_ADDR` is set (docs/operations.md)."""
    bot = build_bot(shards, api_base)
    exporter = bot.get_cog(COG_NAME).chat.exporter
    async with serving_metrics(settings, exporter, ready=readiness_of(bot)):
        await serve(bot, token)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="A Discord bot whose LLM chat never hangs (tomori-cog on nextcord).",
        epilog=environment_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--console", action="store_true", help=CONSOLE_HELP)
    modes.add_argument("--check", action="store_true", help=CHECK_HELP)
    args = parser.parse_args(argv)
    if args.console or args.check:
        return check_main(check_bot_settings) if args.check else console_main()
    token = os.environ.get("DISCORD_TOKEN", "").strip()
    if not token:
        print(f"error: {TOKEN_HELP}", file=sys.stderr)
        return 2
    if not installed("nextcord"):
        missing = f"bot.py runs on nextcord, which is not installed: {install_extra('nextcord')}"
        print(f"error: {missing}", file=sys.stderr)
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

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("nextcord.client").addFilter(without_the_voice_warning)
    shared = shards_without_a_shared_database(os.environ, settings)
    if shared:
        logging.getLogger(__name__).warning("%s", shared)
    import nextcord

    try:
        run_without_waiting_for_threads(run_bot(token, shards, api_base, settings))
    except nextcord.LoginFailure:
        print("error: Discord refused the token (401): check DISCORD_TOKEN", file=sys.stderr)
        return 2
    except ConfigError as error:  # TOMORI_METRICS_ADDR's port taken, say
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # aiohttp's connection errors, a failed DNS lookup among them
        print(f"error: could not reach Discord: {error}", file=sys.stderr)
        return 1
    return 0


def without_the_voice_warning(record: logging.LogRecord) -> bool:
    """Drop nextcord's "PyNaCl is not installed, voice will NOT be supported" from the log:
    this bot only writes, so it says nothing on every start but that a library it never needs
    is missing, which reads like a fault to whoever watches the log."""
    return not record.getMessage().startswith("PyNaCl is not installed")


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
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()  # shuts the default executor down without waiting for its threads


def exit_now_if_threads_are_left(code: int) -> None:
    """End the process with `code` even if a worker thread is still blocked (a DNS lookup).

    The interpreter joins every executor thread at exit, which would wait for that lookup.
    Everything of ours is closed by now, so what is written is flushed and the process ends
    without joining them. Only this script may do so: a library must never end its process.
    """
    if threading.active_count() > 1:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    exit_code = main()
    exit_now_if_threads_are_left(exit_code)
    sys.exit(exit_code)
