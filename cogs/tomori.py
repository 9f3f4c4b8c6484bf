"""`bot.load_extension("cogs.tomori")` for bots run from this repository (as `bot.py` is).

An installed tomori-cog is loaded as `bot.load_extension("tomori_cog")`; this file only
forwards to it, so the two names load, unload and reload the very same extension.
"""

from tomori_cog import setup, teardown

__all__ = ["setup", "teardown"]
