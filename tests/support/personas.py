"""Personas in a bot on the faithful REST server: the setup every test of a persona's answer
starts from (tests/cog/test_personas.py, and the tests of what such an answer carries)."""

from __future__ import annotations

from pathlib import Path

from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import OpenRestBot, RestBot
from tests.support.world import CHANNEL_ID


async def reading_over_rest(
    open_rest_bot: OpenRestBot, llm: LLMServer, tmp_path: Path, **overrides: object
) -> RestBot:
    """A bot whose turns read their history over REST, unless told: this server has no gateway
    to echo the bot's own messages (its webhook's included), which a turn reading its memory
    waits a moment for."""
    settings = settings_for(tmp_path, **{"history_memory_channels": 0, **overrides})
    return await open_rest_bot(settings, chain_for(llm))


async def personas_added(bot: RestBot, *names: str, channel: int = CHANNEL_ID) -> None:
    """An admin gives the bot Manage Webhooks in `channel`, so its personas answer there through
    the bot's own webhook, and adds each of `names` ("You are <name>.")."""
    bot.allow_webhooks(channel)
    for name in names:
        await bot.persona("add", name=name, prompt=f"You are {name}.")
