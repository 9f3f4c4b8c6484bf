"""A bot author's own extension that adds the cog with `add_tomori` (settings from the
environment), as a bot that wraps the cog in an extension of its own would."""

from typing import Any

from tomori_cog import add_tomori


def setup(bot: Any) -> Any:
    return add_tomori(bot)
