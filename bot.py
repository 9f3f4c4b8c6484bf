"""The smallest bot with tomori-cog: a nextcord bot that loads the extension; copy it into
your own bot. `DISCORD_TOKEN=... python bot.py` runs it, configured by the environment (the
`tomori` command runs the same bot, with `--console`, `--check` and a bounded stop)."""

import os

import nextcord
from nextcord.ext import commands

intents = nextcord.Intents.default()
intents.message_content = True  # the cog reads what people write
bot = commands.Bot(intents=intents)
bot.load_extension("tomori_cog")  # reads TOMORI_MODELS and the rest; /kill syncs on connect
bot.run(os.environ["DISCORD_TOKEN"])
