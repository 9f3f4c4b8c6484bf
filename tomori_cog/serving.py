"""The command's run mode: a bot of the installed Discord library with the cog, served until a
stop signal, then closed within a bound.

nextcord is used where it is installed, else discord.py (`library.installed_library`); only
that one is imported. The bot is the plain one a bot author would write, with the Message
Content intent and nothing but the cog: a `commands.Bot`, or an `AutoShardedBot` where the
operator names shards.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
import signal
from collections.abc import Coroutine
from typing import Any

from tomori.config.settings import Settings
from tomori.monitoring.serving import serving_metrics
from tomori.store.connect import open_database
from tomori_cog.cogs.shared import COG_NAME
from tomori_cog.readiness import readiness_of
from tomori_cog.variables import Shards

log = logging.getLogger(__name__)

EXTENSION = "tomori_cog"
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


async def check_database(settings: Settings) -> None:
    """Open and migrate the database before connecting, so a bad file stops start-up here."""
    database = await open_database(settings)
    await database.close()


def freeze_start_up_heap(bot: Any) -> None:
    """Once the cog has started, move everything alive then out of the garbage collector's way.

    Every full collection walks every object the process tracks: the imported libraries alone
    (the Discord library, the provider SDK) are over 100k objects, a pause of 100 ms or more on
    a small machine, and while it runs no stream is read and no timeout fires. What exists once
    the bot is ready lives as long as the process, so it is frozen (`gc.freeze`), once: a second
    freeze on a reconnect would also freeze turns in flight, and leak what of them is cyclic.
    """
    frozen = False

    async def freeze() -> None:
        nonlocal frozen
        if frozen:
            return
        frozen = True
        cog = bot.get_cog(COG_NAME)
        if cog is not None:
            await cog.chat.ensure_started()  # the provider SDKs are imported by now
        gc.collect()
        gc.freeze()

    bot.add_listener(freeze, "on_ready")


async def serve(bot: Any, token: str) -> None:
    """Run the bot until it stops by itself or SIGTERM or SIGINT arrives, then close it.

    The libraries' own `bot.run` closes the bot on SIGTERM but leaves its connecting task to
    run on: a bot still logging in or connecting (a gateway or network that does not answer)
    went on waiting for the library's own timeout, about 30 s, before it exited. Here a signal
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
            log.info("stop signal received: closing")
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
        log.warning(
            "closing %s took over %.1f s: exiting anyway (the next start recovers its locks)",
            what,
            seconds,
        )


async def build_bot(library: str, shards: Shards, api_base: str | None = None) -> Any:
    """The `library` bot (its module: "nextcord" or "discord") with the cog loaded; awaited
    inside the running loop, since discord.py loads an extension by a coroutine.

    With shards, the library's `AutoShardedBot` runs the ones given in this one process (all
    of them without ids); without, a plain `Bot`, whose one connection is all a bot below
    Discord's sharding threshold needs (an `AutoShardedBot` would ask Discord for a count, and
    could open several connections the operator never chose).
    """
    point_at(library, api_base)
    module = importlib.import_module(library)
    commands = importlib.import_module(f"{library}.ext.commands")
    intents = module.Intents.default()
    intents.message_content = True
    options: dict[str, Any] = {"intents": intents}
    if library == "discord":
        options["command_prefix"] = ()  # discord.py requires one; the cog has no prefix command
    if shards.shard_count is None:
        bot = commands.Bot(**options)
    else:
        ids = None if shards.shard_ids is None else list(shards.shard_ids)
        options.update(shard_count=shards.shard_count, shard_ids=ids)
        bot = commands.AutoShardedBot(**options)
    if library == "nextcord":
        bot.load_extension(EXTENSION)  # nextcord syncs the slash commands when it connects
        bot.on_error = logged_event_error
    else:
        await bot.load_extension(EXTENSION)
        bot.setup_hook = lambda: synced(bot, module.HTTPException)  # on login, when asked
    freeze_start_up_heap(bot)
    return bot


async def logged_event_error(event: str, *args: Any, **kwargs: Any) -> None:
    """nextcord's `on_error` for a failed event handler (its sync of the slash commands on
    connect, say): logged with its traceback, so that the log stays in its format (JSON lines
    stay JSON), where nextcord's own prints text to standard error. discord.py logs it already."""
    log.exception("the Discord library's %s handler failed; the bot runs on", event)


async def synced(bot: Any, refused: type[Exception]) -> None:
    """discord.py's sync of the slash commands at login. Discord refusing or failing it
    (`refused`: the library's `HTTPException`) is logged and the bot runs on with the commands
    Discord has, as on nextcord, instead of ending the process with a traceback."""
    try:
        await bot.tree.sync()
    except refused:
        log.exception("could not sync the slash commands with Discord; the bot runs on")


def point_at(library: str | None, api_base: str | None) -> None:
    """Send every REST call of the library, webhooks included, to `api_base` (a rate-limit
    proxy in front of the bot's processes), if one is given."""
    if api_base is not None and library is not None:
        importlib.import_module(f"{library}.http").Route.BASE = api_base


async def run_bot(
    library: str, token: str, shards: Shards, api_base: str | None, settings: Settings
) -> None:
    """The run mode's whole life in the loop: build the bot, serve it, close it; with
    /metrics, /healthz and /readyz served meanwhile if `TOMORI_METRICS_ADDR` is set (the
    exporter is the cog's, so the server starts once the bot is built, and stops after it is
    closed)."""
    bot = await build_bot(library, shards, api_base)
    exporter = bot.get_cog(COG_NAME).chat.exporter
    async with serving_metrics(settings, exporter, ready=readiness_of(bot)):
        await serve(bot, token)
