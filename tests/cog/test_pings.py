"""Who an answer pings, on the Discord-faithful REST server with each library's real client:
only the people the conversation involves, never anyone else a model names (a prompt injection
or a hallucinated ID), never @everyone, @here or a role."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import OpenRestBot
from tests.support.scripts import answer
from tests.support.world import Person

STRANGER = 7_000_000_000_000_000_007
"""A user who never wrote in the channel and whom no one asked about."""
ROLE = 8_000_000_000_000_000_008


async def test_an_answer_pings_only_the_people_the_conversation_involves(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await open_rest_bot(
        settings_for(tmp_path, history_memory_channels=0), chain_for(llm_server)
    )
    bot.say("I'll be around later", by=Person.BOB)
    said = (
        f"Hi <@{Person.BOB.id}>, <@!{STRANGER}> and <@{Person.ALICE.id}>! "
        f"@everyone @here <@&{ROLE}>"
    )
    llm_server.script(answer(said))
    bot.say(f"{bot.mention()} greet everyone here")
    async with asyncio.timeout(10):
        await bot.settled()
    [shown] = bot.shown()
    assert shown.content == said  # the text is as the model wrote it: only the pings differ
    assert shown.pinged == {Person.BOB.id, Person.ALICE.id}  # the stranger is not notified
    assert not shown.pings_everyone
    assert not (shown.allowed_mentions or {}).get("roles")
