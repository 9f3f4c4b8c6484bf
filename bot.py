"""Run a nextcord bot with tomori-cog: `DISCORD_TOKEN=... python bot.py` (`--help` for more)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from tomori.config import VARIABLES, ConfigError, Settings
from tomori.models import MODEL_VARIABLES, ModelChain
from tomori.store import Store, StoreError

TOKEN_HELP = (
    "DISCORD_TOKEN is not set: create an application at "
    "https://discord.com/developers/applications, add a bot with the Message Content intent, "
    "and run DISCORD_TOKEN=<its token> python bot.py"
)


def environment_help() -> str:
    rows = [("DISCORD_TOKEN", "(required)", "the bot's token")]
    rows += list(MODEL_VARIABLES)
    rows += [(variable.name, variable.default, variable.help) for variable in VARIABLES]
    width = max(len(name) for name, _, _ in rows)
    lines = ["environment variables:"]
    for name, default, text in rows:
        lines.append(f"  {name:<{width}}  {text} [default: {default}]")
    return "\n".join(lines)


async def check_database(settings: Settings) -> None:
    """Open and migrate the database before connecting, so a bad file stops start-up here."""
    store = await Store.open(settings.db_path)
    try:
        await store.migrate()
    finally:
        await store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="A Discord bot whose LLM chat never hangs (tomori-cog on nextcord).",
        epilog=environment_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.parse_args(argv)
    token = os.environ.get("DISCORD_TOKEN", "").strip()
    if not token:
        print(TOKEN_HELP, file=sys.stderr)
        return 2
    try:
        settings = Settings.from_env()
        ModelChain.from_env()
        asyncio.run(check_database(settings))
    except (ConfigError, StoreError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    import nextcord
    from nextcord.ext import commands

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    intents = nextcord.Intents.default()
    intents.message_content = True
    bot = commands.Bot(intents=intents)
    bot.load_extension("cogs.tomori")  # nextcord syncs the slash commands when it connects
    bot.run(token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
