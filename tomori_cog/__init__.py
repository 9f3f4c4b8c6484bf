"""tomori-cog's Discord extension: `bot.load_extension("tomori_cog")`.

Works in a nextcord 3 bot and in a discord.py 2 bot: the library is detected from the bot and
only that one is imported. Settings and the model chain are read from the environment when
the extension loads, and a bad value stops loading with an error naming the variable. Bot
authors who configure in code call `add_tomori(bot, settings=..., chain=...)` instead.

Both libraries, on unloading an extension or failing to load one, remove the cogs whose class
module lies under the extension's name. The cog's class names whoever added it as its module
(the extension's name, or the caller of `add_tomori`; see `_belong_to`), so a second load
under either name leaves it alone, and it remembers the extension name it was loaded under:
only that name's `teardown` removes it.

- `cogs/`             the cog class of each library, /kill, /scene and /tomori
- `listener/`         which messages become turns: the reply rule, the limits, deliverability
- `reading/`          what the model is shown of Discord: history, attachments, read_message
- `chat.py`           `TomoriChat`: the cog's parts, its runtime once started, /kill, /scene
- `intake.py`         the listener: which messages become turns, stop words, edits, deletes
- `runtime.py`        what the started cog runs with, opened in one exit stack
- `surface.py`        a Discord channel as the core's turn sees it (`tomori.turns.Surface`)
- `library.py`        which library the bot uses, and the few calls that differ
- `discord_io.py`     the one way a message leaves for Discord (paced, errors translated,
                      remembered), the bot's port and notice sink over a library channel
- `pacing.py`         `DiscordPacing`: the bot's requests under its budget, and what Discord
                      answered them (the `/tomori status` traffic line)
- `readiness.py`      what `/readyz` asks of a bot: its gateway connected, its database answering
- `webhooks.py`       the bot's webhook in each channel, and the port that posts by it
- `persona_port.py`   a persona's port: by the webhook, else as the bot with its name shown
- `confirmations.py`  a tool call's confirmation prompt, its buttons, and their presses
- `takes.py`          regenerate and swipe: the last answer's buttons and their presses
- `stop_buttons.py`   each live answer's Stop button, its presses, and its tidy-up
- `locales.py`        the language a reader gets: an interaction's, else its server's
- `progress_marks.py` a trigger's progress as the bot's own reactions on it (`ProgressMarks`)
- `token_redaction.py` Discord's webhook and interaction tokens kept out of every log line
- `buckets.py`        nextcord's rate-limit buckets kept per channel, as Discord keys them
- `cli.py`            the `tomori` command: its modes, its exit (`__main__.py`: the same
                      command as `python -m tomori_cog`)
- `serving.py`        its run mode: a bot of the installed library, served until a signal
- `modes.py`          what `tomori --console` and `--check` run
- `variables.py`      every variable the command reads, as `--help` and
                      docs/configuration.md list them; its shards
- `discord_check.py`  `--check` with a token: login, the Message Content intent, the invite
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
import types
from typing import Any, Protocol, runtime_checkable

from tomori.config.models import ModelChain
from tomori.config.settings import ConfigError, DatabaseUrl, Delivery, KillPolicy, Settings
from tomori.errors import TomoriError
from tomori.tools.confirmation import Confirmation
from tomori.tools.registry import Tool, ToolContext, ToolFailure, ToolOutput
from tomori_cog.chat import TomoriChat
from tomori_cog.cogs.shared import COG_NAME
from tomori_cog.library import Library, detect

__all__ = [
    "AlreadyLoaded",
    "ConfigError",
    "Confirmation",
    "DatabaseUrl",
    "Delivery",
    "KillPolicy",
    "ModelChain",
    "Settings",
    "TomoriCog",
    "TomoriError",
    "Tool",
    "ToolContext",
    "ToolFailure",
    "ToolOutput",
    "add_tomori",
    "load_as",
    "setup",
    "teardown",
    "unload_as",
]

log = logging.getLogger(__name__)


@runtime_checkable
class TomoriCog(Protocol):
    """What `bot.get_cog("Tomori")` returns is one: `isinstance(cog, TomoriCog)` gives a type
    checker its `chat` and `register_tool`.

    A protocol, not the cog's class: reloading the `tomori_cog` extension (or a failed load
    of it) makes the library import every `tomori_cog` module afresh, so the reloaded cog's
    class is a new one, which an `isinstance` against the class imported before would deny.
    """

    chat: TomoriChat
    extension: str | None
    """The extension name that loaded the cog; None if `add_tomori` added it."""

    def register_tool(self, tool: Tool) -> None:
        """Offer `tool` to the model from the next turn on, in this cog and in every Tomori
        cog the bot loads later; a tool registered under a name already taken replaces it."""


def add_tomori(
    bot: Any, *, settings: Settings | None = None, chain: ModelChain | None = None
) -> Any:
    """Add the cog to `bot`; returns what `bot.add_cog` returns (await it on discord.py).

    The cog belongs to the module that called this, as a cog class written there would: if
    that module is an extension of the bot's, unloading it removes the cog."""
    caller = sys._getframe(1).f_globals.get("__name__") or "__main__"
    return _add(bot, settings, chain, owner=caller, extension=None)


def _add(
    bot: Any,
    settings: Settings | None,
    chain: ModelChain | None,
    *,
    owner: str,
    extension: str | None,
) -> Any:
    library = detect(bot)
    loaded = bot.get_cog(COG_NAME)
    if isinstance(loaded, TomoriCog):  # whichever way it came: not the library's plain error
        where = f"as the extension {loaded.extension!r}" if loaded.extension else "with add_tomori"
        raise AlreadyLoaded(f"the Tomori cog is already loaded {where}: unload it first")
    if settings is None:  # read from the environment: say what of it is read by nothing
        # imported here: `python -m tomori_cog.variables` must not find it imported already
        from tomori_cog.variables import unread_variables

        for line in unread_variables(os.environ):
            log.warning("%s", line)
    chat = TomoriChat(bot, library, settings or Settings.from_env(), chain or ModelChain.from_env())
    module = importlib.import_module(
        f"tomori_cog.cogs.{library.name.replace('discord', 'discordpy')}_cog"
    )
    cog = module.build_cog(chat, library)
    cog.extension = extension
    _belong_to(cog, owner)
    return _added(bot, library, cog)


def _added(bot: Any, library: Library, cog: Any) -> Any:
    """`bot.add_cog(cog)`, the cog's redaction of Discord's tokens in the log installed first
    and taken away again if the adding fails (its unloading takes it away otherwise)."""
    cog.added()
    try:
        adding = bot.add_cog(cog)
    except BaseException:
        cog.unloaded()
        raise
    if library.is_nextcord:
        return adding

    async def awaited() -> Any:
        try:
            return await adding
        except BaseException:
            cog.unloaded()
            raise

    return awaited()


def _belong_to(cog: Any, owner: str) -> None:
    """Mark the cog, its listeners and its app commands as the module `owner`'s own.

    Both libraries decide what an extension owns by module name: when loading it fails, they
    drop every cog, listener and app command whose module lies under its name. The cog's code
    lives in `tomori_cog.*`, so a failed load of `tomori_cog` (while `cogs.tomori` or
    `add_tomori` runs the cog) took the running cog with it: it was removed and closed, its
    listeners and `/kill` gone. Its class is built afresh for each cog, so its module can name
    whoever added it instead: the extension that loaded it, or the caller of `add_tomori`. The
    listeners it inherits (`cogs/listeners.py`, shared by every cog) are copied onto the class
    first, so that only this cog's copies are marked as the owner's.
    """
    cog_class = type(cog)
    cog_class.__module__ = owner
    for base in cog_class.__mro__[1:]:
        for name, member in vars(base).items():
            if hasattr(member, "__cog_listener__") and name not in vars(cog_class):
                setattr(cog_class, name, _copied(member))
    for member in vars(cog_class).values():
        if inspect.isfunction(member):
            member.__module__ = owner
    for command in getattr(cog, "get_app_commands", list)():
        command.module = owner  # discord.py's tree drops commands by this


def _copied(function: Any) -> Any:
    """A new function object running `function`'s code, with its attributes."""
    copy = types.FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    copy.__dict__.update(function.__dict__)
    copy.__qualname__ = function.__qualname__
    return copy


class AlreadyLoaded(TomoriError, RuntimeError):
    """The bot already has a Tomori cog: one bot runs one (its listener would answer twice)."""


def load_as(bot: Any, extension: str) -> Any:
    """`setup` for the extension named `extension`: add a cog that remembers that name."""
    return _add(bot, None, None, owner=extension, extension=extension)


def unload_as(bot: Any, extension: str) -> Any:
    """`teardown` for the extension named `extension`: remove the cog it added, and only that.

    The library calls `teardown` also when `setup` failed, a second load under the other name
    among others: the cog that is running was added by the other name, and stays.
    Like `setup`, a plain function: nextcord calls it without awaiting, and discord.py awaits
    what it returns (its `remove_cog` is a coroutine, and so is the cog's `cog_unload`).
    """
    cog = bot.get_cog(COG_NAME)
    ours = isinstance(cog, TomoriCog) and cog.extension == extension
    removal = bot.remove_cog(COG_NAME) if ours else None
    if detect(bot).is_nextcord:
        return None
    return removal if removal is not None else _nothing()


def setup(bot: Any) -> Any:
    """The extension entry point. A plain function: nextcord would not await a coroutine."""
    return load_as(bot, __name__)


def teardown(bot: Any) -> Any:
    """The extension's exit: remove the cog `setup` added, which closes what it opened."""
    return unload_as(bot, __name__)


async def _nothing() -> None:
    return None
