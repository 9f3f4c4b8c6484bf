"""What a user does while the bot answers in a channel, through the cog in a bot of each
library: a queued message deleted before its turn is not answered, one edited is answered as
it now is."""

from __future__ import annotations

from pathlib import Path

from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.conversation import shown
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer


async def open_chat(tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot) -> ChatBot:
    return await open_bot(settings_for(tmp_path), chain_for(llm_server))


async def test_a_queued_message_deleted_before_its_turn_is_not_answered(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot)
    llm_server.script(answer("First.", gap=0.1), answer("Third."))
    await bot.say(f"{bot.mention()} first")
    await llm_server.request_arrived.wait()
    second = await bot.say(f"{bot.mention()} second")
    await bot.say(f"{bot.mention()} third")
    await bot.delete(second)  # while the first answer streams: its turn has not started
    await bot.settled()
    assert await bot.contents() == ["First.", "Third."]
    assert len(llm_server.requests) == 2
    assert "second" not in str(llm_server.requests[1].body)


async def test_a_queued_message_edited_before_its_turn_is_answered_as_edited(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot)
    llm_server.script(answer("First.", gap=0.1), answer("Six."))
    await bot.say(f"{bot.mention()} first")
    await llm_server.request_arrived.wait()
    question = await bot.say(f"{bot.mention()} what is 2+2?")
    await bot.edit(question, f"{bot.mention()} what is 3+3?")
    await bot.settled()
    assert await bot.contents() == ["First.", "Six."]
    assert shown(llm_server, 1)[-1] == "alice: @Tomori what is 3+3?"
    assert "2+2" not in str(llm_server.requests[1].body)
