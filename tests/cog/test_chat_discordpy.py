"""tomori-cog in a real discord.py bot (dpytest), end to end against the local LLM server."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.dpy import DpyBot, start_dpy_bot, stop_dpy_bot
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer, stalled_after
from tomori.config.settings import KillPolicy
from tomori.delivery.notices import KILL_NOT_ALLOWED, KILL_NOTHING_TO_STOP, KILL_STOPPED
from tomori.store.connect import open_database

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
async def dpy(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[DpyBot]:
    harness = await start_dpy_bot(settings_for(tmp_path), chain_for(llm_server), monkeypatch)
    yield harness
    await stop_dpy_bot(harness)


async def test_a_mention_gets_the_models_answer_streamed_into_the_channel(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    llm_server.script(answer("Hello there!\n\nHow can I help?"))
    await dpy.say(f"{dpy.mention()} hi")
    await dpy.settled()
    replies = await dpy.bot_messages()
    assert [m.content for m in replies] == ["Hello there!", "How can I help?"]
    messages = llm_server.requests[0].body["messages"]
    assert messages[0]["role"] == "system"
    me = dpy.channel.guild.me.display_name
    assert messages[-1] == {"role": "user", "content": f"{dpy.member.display_name}: @{me} hi"}


async def test_messages_that_do_not_ask_for_a_reply_are_left_alone(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    await dpy.say("just chatting")
    await dpy.say(f"!{dpy.mention()} a command for another bot")
    await dpy.settled()
    assert llm_server.requests == []
    assert await dpy.bot_messages() == []


async def test_a_long_answer_arrives_split_into_messages_that_fit(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    paragraph = " ".join(["streaming"] * 120)  # 1,199 characters
    text = f"{paragraph}\n\n{paragraph}\n\n```python\n" + "x = 1\n" * 400 + "```"
    llm_server.script(answer(text, pieces=60))
    await dpy.say(f"{dpy.mention()} write a lot")
    await dpy.settled()
    contents = [m.content for m in await dpy.bot_messages()]
    assert len(contents) >= 4
    assert all(len(content) <= 1950 for content in contents)
    assert contents[0] == paragraph
    assert contents[1] == paragraph
    for part in contents[2:]:
        assert part.startswith("```python\n")
        assert part.endswith("```")
    assert sum(part.count("x = 1") for part in contents[2:]) == 400


async def test_two_quick_messages_are_answered_in_order_the_second_as_a_reply(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    llm_server.script(answer("First answer.", gap=0.05), answer("Second answer."))
    await dpy.say(f"{dpy.mention()} first question")
    second = await dpy.say(f"{dpy.mention()} second question")
    await dpy.settled()
    assert [m.content for m in await dpy.bot_messages()] == ["First answer.", "Second answer."]
    references = [p.get("message_reference") for p in dpy.sent_payloads]
    assert references[0] is None
    assert references[1] is not None
    assert references[1]["message_id"] == second.id
    # the second question was not in the first answer's context: it had its own turn
    first_context = str(llm_server.requests[0].body["messages"])
    assert "second question" not in first_context


async def test_a_stalled_model_posts_one_timeout_notice_and_frees_the_channel(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_for(
        tmp_path, stream_first_token_timeout_ms=300, stream_sdk_call_timeout_ms=300
    )
    dpy = await start_dpy_bot(settings, chain_for(llm_server), monkeypatch)
    try:
        llm_server.script(stalled_after("I was saying\n\n"), answer("Back again."))
        await dpy.say(f"{dpy.mention()} hello?")
        await dpy.settled()
        messages = await dpy.bot_messages()
        assert [m.content for m in messages if m.content] == ["I was saying"]
        notices = [m.embeds[0].title for m in messages if m.embeds]
        assert notices == ["Response Timed Out"]
        await dpy.say(f"{dpy.mention()} still there?")
        await dpy.settled()
        assert (await dpy.bot_messages())[-1].content == "Back again."
    finally:
        await stop_dpy_bot(dpy)


async def test_kill_stops_a_slow_stream_keeps_its_text_and_the_next_message_is_served(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    llm_server.script(stalled_after("Partial thought.\n\n"), answer("Fresh answer."))
    await dpy.say(f"{dpy.mention()} think slowly")
    await llm_server.request_arrived.wait()
    await dpy.sent.wait()
    killed_at = time.monotonic()
    reply = await dpy.kill()
    await dpy.settled()
    embed = reply["data"]["embeds"][0]
    assert (embed["title"], reply["data"]["flags"] & 64) == (KILL_STOPPED.title, 64)
    connection = llm_server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), 1)
    assert connection.closed_at is not None
    assert connection.closed_at - killed_at < 0.5
    assert [m.content for m in await dpy.bot_messages()] == ["Partial thought."]
    await dpy.say(f"{dpy.mention()} again")
    await dpy.settled()
    assert (await dpy.bot_messages())[-1].content == "Fresh answer."


async def test_kill_with_nothing_running_says_so(dpy: DpyBot) -> None:
    reply = await dpy.kill()
    assert reply["data"]["embeds"][0]["title"] == KILL_NOTHING_TO_STOP.title


async def test_kill_by_someone_else_is_refused_under_the_requester_policy(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_for(tmp_path, kill_policy=KillPolicy.REQUESTER)
    dpy = await start_dpy_bot(settings, chain_for(llm_server), monkeypatch)
    try:
        import discord.ext.test as dpytest

        other = await dpytest.member_join(name="Bystander")
        llm_server.script(stalled_after("Working on it.\n\n"))
        await dpy.say(f"{dpy.mention()} slow one")
        await llm_server.request_arrived.wait()
        refused = await dpy.kill(member=other)
        assert refused["data"]["embeds"][0]["title"] == KILL_NOT_ALLOWED.title
        moderator = await dpy.kill(member=other, permissions=0x2000)  # Manage Messages
        assert moderator["data"]["embeds"][0]["title"] == KILL_STOPPED.title
        await dpy.settled()
    finally:
        await stop_dpy_bot(dpy)


async def test_everyone_and_role_mentions_from_the_model_ping_no_one(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    llm_server.script(answer("@everyone @here <@&123456> look!"))
    await dpy.say(f"{dpy.mention()} announce")
    await dpy.settled()
    # Only users may be pinged: no @everyone/@here, no roles, not the replied-to author.
    assert dpy.sent_payloads[0]["allowed_mentions"] == {"parse": ["users"]}
    assert dpy.sent_payloads[0]["content"] == "@everyone @here <@&123456> look!"


async def test_a_lock_left_in_the_database_is_recovered_and_the_channel_served(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_for(tmp_path)
    await (await open_database(settings)).close()
    dpy = await start_dpy_bot(settings, chain_for(llm_server), monkeypatch)
    try:
        # a crashed process's leftover lock
        with closing(sqlite3.connect(settings.db_path)) as db, db:
            db.execute(
                "INSERT INTO channel_locks (channel_id, owner, turn_id, locked_at,"
                " last_progress_at, watchdogs) VALUES (?, 'crashed', 't', 0, 0, 1)",
                (str(dpy.channel.id),),
            )
        llm_server.script(answer("Served after the crash."))
        await dpy.say(f"{dpy.mention()} anyone home?")
        await dpy.settled()
        assert (await dpy.bot_messages())[-1].content == "Served after the crash."
    finally:
        await stop_dpy_bot(dpy)
