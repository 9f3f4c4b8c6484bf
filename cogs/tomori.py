"""`bot.load_extension("cogs.tomori")` for bots run from this repository.

An installed tomori-cog is loaded as `bot.load_extension("tomori_cog")`; this file only
forwards to it, under its own name: the cog remembers which name loaded it, and only that
name's `teardown` removes it.
"""

from typing import Any

from tomori_cog import load_as, unload_as


def setup(bot: Any) -> Any:
    return load_as(bot, __name__)


def teardown(bot: Any) -> Any:
    return unload_as(bot, __name__)
