"""Run a nextcord bot with tomori-cog: `DISCORD_TOKEN=... python bot.py` (`--help` for more)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from tomori.config import VARIABLES, ConfigError, Settings
from tomori.models import MODEL_VARIABLES, ModelChain

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
        Settings.from_env()
        ModelChain.from_env()
    except ConfigError as error:
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
