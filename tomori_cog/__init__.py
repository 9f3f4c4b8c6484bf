"""tomori-cog's Discord extension: `bot.load_extension("tomori_cog")`.

Works in a nextcord 3 bot and in a discord.py 2 bot: the library is detected from the bot and
only that one is imported. Settings and the model chain are read from the environment when
the extension loads, and a bad value stops loading with an error naming the variable. Bot
authors who configure in code call `add_tomori(bot, settings=..., chain=...)` instead.

Both libraries, on unloading an extension, remove only the cogs whose class was defined in the
extension's own modules; the cog is built in `tomori_cog.*_cog`, which is not a module of an
extension loaded under another name (this repository's `cogs.tomori`). So `teardown` removes
it by name, whichever name the extension was loaded under.
"""

from __future__ import annotations

import importlib
from typing import Any

from tomori.config import Settings
from tomori.models import ModelChain
from tomori_cog.commands import COG_NAME, TomoriCogParts
from tomori_cog.library import detect
from tomori_cog.service import TomoriService


def add_tomori(
    bot: Any, *, settings: Settings | None = None, chain: ModelChain | None = None
) -> Any:
    """Add the cog to `bot`; returns what `bot.add_cog` returns (await it on discord.py)."""
    library = detect(bot)
    service = TomoriService(
        bot, library, settings or Settings.from_env(), chain or ModelChain.from_env()
    )
    module = importlib.import_module(
        f"tomori_cog.{library.name.replace('discord', 'discordpy')}_cog"
    )
    return bot.add_cog(module.build_cog(service, library))


def setup(bot: Any) -> Any:
    """The extension entry point. A plain function: nextcord would not await a coroutine."""
    return add_tomori(bot)


def teardown(bot: Any) -> Any:
    """The extension's exit: remove the cog `setup` added, which closes what it opened.

    Like `setup`, a plain function: nextcord calls it without awaiting, and discord.py awaits
    what it returns (its `remove_cog` is a coroutine, and so is the cog's `cog_unload`).
    """
    cog = bot.get_cog(COG_NAME)
    removal = bot.remove_cog(COG_NAME) if isinstance(cog, TomoriCogParts) else None
    if detect(bot).is_nextcord:
        return None
    return removal if removal is not None else _nothing()


async def _nothing() -> None:
    return None
