"""What the model is told of answers a stop ended, through the cog in a bot of each library:
the next turn's request carries a note (never shown in the channel) naming each message whose
answer /kill, a stop word or a follow-up stopped, or that a stop took off the queue, so the
model does not take a stopped question up again, nor run again the tool call it was making."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.conversation import shown
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer, silent, stalled_after, tool_call
from tests.support.world import Person
from tomori.providers.base import JsonObject
from tomori.tools.registry import Tool, ToolContext

MANAGE_MESSAGES = 1 << 13
NOTE = "[Note from the bot, not part of the conversation: answers stopped before this one]"


class HangingSearch:
    """A tool that runs until it is cancelled: a search that takes its time."""

    def __init__(self) -> None:
        self.running = asyncio.Event()
        self.runs = 0

    async def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> JsonObject:
        self.runs += 1
        self.running.set()
        await asyncio.Event().wait()
        return {}

    def tool(self) -> Tool:
        return Tool("web_search", "Search the web", {"type": "object", "properties": {}}, self.run)


PATIENT = {"stream_first_token_timeout_ms": 60_000, "stream_sdk_call_timeout_ms": 60_000}
"""A stalled model is stopped by the test, never by its timeout, however loaded the machine."""


async def open_chat(tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot) -> ChatBot:
    return await open_bot(settings_for(tmp_path, **PATIENT), chain_for(llm_server))


def last_said(llm_server: LLMServer, request: int) -> str:
    return shown(llm_server, request)[-1]


async def test_after_kill_during_a_tool_the_next_question_tells_the_model_what_was_stopped(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    """The issue's case: /kill while the model's 30-second search runs, then a new question;
    the two are one user turn, and the note says the first was stopped, and during what."""
    bot = await open_chat(tmp_path, llm_server, open_bot)
    search = HangingSearch()
    bot.client.get_cog("Tomori").register_tool(search.tool())
    llm_server.script(tool_call("web_search", "{}"), answer("Rust 1.80 is out."), answer("Yes."))
    await bot.say(f"{bot.mention()} search the news about Python")
    await search.running.wait()
    await bot.kill()
    await bot.settled()
    await bot.say(f"{bot.mention()} what about Rust?")
    await bot.settled()
    assert len(llm_server.requests) == 2
    assert shown(llm_server, 1)[-2:] == [
        "alice: @Tomori search the news about Python",
        "alice: @Tomori what about Rust?\n"
        f"{NOTE}\n"
        '- Your answer to "alice: @Tomori search the news about Python" was stopped before it'
        " showed anything, while the tool web_search was running. Do not answer it, nor call"
        " web_search for it again, unless someone asks again.",
    ]
    assert await bot.contents() == ["Rust 1.80 is out."]  # the note is the model's alone
    await bot.say(f"{bot.mention()} thanks, is that all?")
    await bot.settled()
    assert last_said(llm_server, 2) == "alice: @Tomori thanks, is that all?"  # told once
    assert search.runs == 1


async def test_after_a_stop_word_the_next_question_tells_the_model_what_was_stopped(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot)
    llm_server.script(silent(), answer("Here is a limerick."))
    await bot.say(f"{bot.mention()} write me an essay")
    await llm_server.request_arrived.wait()
    await bot.say("stop")
    await bot.settled()
    await bot.say(f"{bot.mention()} a limerick instead")
    await bot.settled()
    assert shown(llm_server, 1)[-2:] == [  # the stop word itself is shown to no model
        "alice: @Tomori write me an essay",
        "alice: @Tomori a limerick instead\n"
        f"{NOTE}\n"
        '- Your answer to "alice: @Tomori write me an essay" was stopped before it showed'
        " anything. Do not answer it unless someone asks again.",
    ]


async def test_a_moderators_kill_tells_the_next_model_of_the_cut_answer_and_what_it_cleared(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot)
    llm_server.script(stalled_after("Chapter one.\n\n"), answer("Short, then."))
    await bot.say(f"{bot.mention()} tell me a long story", by=Person.BOB)
    await bot.sent_event.wait()
    await bot.say(f"{bot.mention()} and a poem after it", by=Person.ALICE)
    await bot.admitted()  # queued behind Bob's story
    await bot.kill(by=Person.BOB, permissions=MANAGE_MESSAGES)
    await bot.settled()
    await bot.say(f"{bot.mention()} something short", by=Person.BOB)
    await bot.settled()
    assert shown(llm_server, 1)[-4:] == [
        "bob: @Tomori tell me a long story",
        "Chapter one.",
        "alice: @Tomori and a poem after it",
        "bob: @Tomori something short\n"
        f"{NOTE}\n"
        '- Your answer to "bob: @Tomori tell me a long story" was stopped after the part of it'
        " shown above. Do not answer it unless someone asks again.\n"
        '- "alice: @Tomori and a poem after it" was taken off the queue by a stop before its'
        " answer began. Do not answer it unless someone asks again.",
    ]


async def test_two_kills_in_quick_succession_lose_no_message_and_tell_both_stops(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    """Each /kill is followed at once by a message: the channel takes it, whether or not the
    stopped answer has handed it on yet, and the last answer's model is told of both stops."""
    bot = await open_chat(tmp_path, llm_server, open_bot)
    llm_server.script(
        stalled_after("First try.\n\n"), stalled_after("Second try.\n\n"), answer("Third.")
    )
    await bot.say(f"{bot.mention()} one")
    for stalled, then in (("First try.", "two"), ("Second try.", "three")):
        bot.sent_event.clear()
        await bot.sent_event.wait()
        assert (await bot.contents())[-1] == stalled
        await bot.kill(by=Person.BOB, permissions=MANAGE_MESSAGES)
        await bot.say(f"{bot.mention()} {then}")  # at once
    await bot.settled()
    assert await bot.contents() == ["First try.", "Second try.", "Third."]
    note = last_said(llm_server, 2).split(f"{NOTE}\n", 1)[1]
    assert note.splitlines() == [
        '- Your answer to "alice: @Tomori one" was stopped after the part of it shown above.'
        " Do not answer it unless someone asks again.",
        '- Your answer to "alice: @Tomori two" was stopped after the part of it shown above.'
        " Do not answer it unless someone asks again.",
    ]
