"""tomori-cog's Discord extension: `bot.load_extension("tomori_cog")`.

Works in a nextcord 3 bot and in a discord.py 2 bot: the library is detected from the bot and
only that one is imported. Settings and the model chain are read from the environment when
the extension loads, and a bad value stops loading with an error naming the variable. Bot
authors who configure in code call `add_tomori(bot, settings=..., chain=...)` instead.

Both libraries, on unloading an extension, remove only the cogs whose class was defined in the
extension's own modules; the cog is built in `tomori_cog.*_cog`, which is not a module of an
extension loaded under another name (this repository's `cogs.tomori`). So the cog remembers
the name it was loaded under, and `teardown` removes it by that name.

- `cogs/`             the cog class of each library, /kill and /tomori
- `listener/`         which messages become turns: the reply rule, the limits, deliverability
- `reading/`          what the model is shown of Discord: history, attachments, read_message
- `service.py`        `TomoriService`: the listener and the turns; owns the store and the locks
- `library.py`        which library the bot uses, and the few calls that differ
- `channel_config.py` a channel's model chain, providers and system prompt for its turn
- `discord_io.py`     the core's channel port and notice sink over a library channel
- `modes.py`          what `bot.py --console` and `--check` run
- `variables.py`      every variable bot.py reads, as `--help` and docs/configuration.md
                      list them; bot.py's shards
- `discord_check.py`  `--check` with a token: login, the Message Content intent, the invite
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
from typing import Any

from tomori.config.models import ModelChain
from tomori.config.settings import ConfigError, DatabaseUrl, Delivery, KillPolicy, Settings
from tomori.errors import TomoriError
from tomori.generation.tools import Tool, ToolContext, ToolFailure
from tomori_cog.cogs.shared import COG_NAME, TomoriCogParts
from tomori_cog.library import detect
from tomori_cog.service import TomoriService

__all__ = [
    "AlreadyLoaded",
    "ConfigError",
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
    "add_tomori",
    "load_as",
    "setup",
    "teardown",
    "unload_as",
]

log = logging.getLogger(__name__)

TomoriCog = TomoriCogParts
"""What `bot.get_cog("Tomori")` returns is one: `isinstance(cog, TomoriCog)` gives a type
checker its `service` and `register_tool`."""


def add_tomori(
    bot: Any, *, settings: Settings | None = None, chain: ModelChain | None = None
) -> Any:
    """Add the cog to `bot`; returns what `bot.add_cog` returns (await it on discord.py)."""
    return _add(bot, settings, chain, extension=None)


def _add(
    bot: Any, settings: Settings | None, chain: ModelChain | None, *, extension: str | None
) -> Any:
    library = detect(bot)
    if settings is None:  # read from the environment: say what of it is read by nothing
        # imported here: `python -m tomori_cog.variables` must not find it imported already
        from tomori_cog.variables import unread_variables

        for line in unread_variables(os.environ):
            log.warning("%s", line)
    service = TomoriService(
        bot, library, settings or Settings.from_env(), chain or ModelChain.from_env()
    )
    module = importlib.import_module(
        f"tomori_cog.cogs.{library.name.replace('discord', 'discordpy')}_cog"
    )
    cog = module.build_cog(service, library)
    if extension is not None:
        _belong_to(cog, extension)
    return bot.add_cog(cog)


def _belong_to(cog: Any, extension: str) -> None:
    """Mark the cog, its listeners and its app commands as the extension's own.

    Both libraries decide what an extension owns by module name: when loading it fails, they
    drop every cog, listener and app command whose module lies under its name. The cog's code
    lives in `tomori_cog.*`, so a failed load of `tomori_cog` (while `cogs.tomori` runs the
    cog) took the running cog's listeners and `/kill` with it. Its class is built afresh for
    each cog, so its module can name the extension that loaded it instead.
    """
    cog.extension = extension
    cog_class = type(cog)
    cog_class.__module__ = extension
    for member in vars(cog_class).values():
        if inspect.isfunction(member):
            member.__module__ = extension
    for command in getattr(cog, "get_app_commands", list)():
        command.module = extension  # discord.py's tree drops commands by this


class AlreadyLoaded(TomoriError, RuntimeError):
    """The bot already has a Tomori cog: one bot runs one (its listener would answer twice)."""


def load_as(bot: Any, extension: str) -> Any:
    """`setup` for the extension named `extension`: add a cog that remembers that name."""
    loaded = bot.get_cog(COG_NAME)
    if isinstance(loaded, TomoriCogParts):
        where = f"as the extension {loaded.extension!r}" if loaded.extension else "with add_tomori"
        raise AlreadyLoaded(f"the Tomori cog is already loaded {where}: unload it first")
    return _add(bot, None, None, extension=extension)


def unload_as(bot: Any, extension: str) -> Any:
    """`teardown` for the extension named `extension`: remove the cog it added, and only that.

    The library calls `teardown` also when `setup` failed, a second load under the other name
    among others: the cog that is running was added by the other name, and stays.
    Like `setup`, a plain function: nextcord calls it without awaiting, and discord.py awaits
    what it returns (its `remove_cog` is a coroutine, and so is the cog's `cog_unload`).
    """
    cog = bot.get_cog(COG_NAME)
    ours = isinstance(cog, TomoriCogParts) and cog.extension == extension
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
