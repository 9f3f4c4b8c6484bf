"""The built-in read_message tool, through a bot of each library: it reads for the model only
what everyone who can see the channel asked in could read, whoever asks (an attacker's links,
or a moderator's question that a planted note steers)."""

from __future__ import annotations

import json
from typing import Any

from tests.support.bots import OpenBot, Posted
from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer, tool_call
from tests.support.world import CHANNEL_ID, GUILD_ID, Person

PUBLIC = CHANNEL_ID + 1
PRIVATE_THREAD = CHANNEL_ID + 50
STAFF = CHANNEL_ID + 60


def link(posted: Posted) -> str:
    return f"https://discord.com/channels/{GUILD_ID}/{posted.channel}/{posted.id}"


def read(posted: Posted, call_id: str) -> Any:
    return tool_call("read_message", json.dumps({"reference": link(posted)}), call_id=call_id)


def results(llm_server: LLMServer) -> list[dict[str, Any]]:
    """What each read_message call gave the model, in order."""
    last = llm_server.requests[-1].body["messages"]
    return [json.loads(m["content"]) for m in last if m["role"] == "tool"]


async def test_read_message_reads_only_what_everyone_in_the_channel_could_read(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Any
) -> None:
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server))
    bot.open_thread(PRIVATE_THREAD, private=True)  # Alice's, Bob is not in it
    bot.open_staff_channel(STAFF)  # @everyone cannot see it; Alice, a moderator, can
    secret = bot.seed("the thread's secret", channel=PRIVATE_THREAD)
    staff = bot.seed("staff only: the ban list", channel=STAFF)
    notes = bot.seed("public notes: launch on Friday", channel=PUBLIC)
    llm_server.script(read(secret, "a"), read(staff, "b"), read(notes, "c"), answer("Friday."))
    # Alice may read all three herself; her question is answered where everyone can see.
    await bot.say(f"{bot.mention()} summarise {link(secret)} {link(staff)} {link(notes)}")
    await bot.settled()
    thread, staff_read, public = results(llm_server)
    assert thread["status"] == "tool_execution_failed"
    assert "private thread" in thread["reason"]
    assert staff_read["status"] == "tool_execution_failed"
    assert "not one everyone in this server can read" in staff_read["reason"]
    assert public["result"]["content"] == "public notes: launch on Friday"
    assert "secret" not in str(llm_server.requests)
    assert "ban list" not in str(llm_server.requests)
    llm_server.script(read(secret, "d"), answer("No."))
    await bot.say(f"{bot.mention()} what is in {link(secret)}?", by=Person.BOB)
    await bot.settled()
    (refused,) = results(llm_server)
    assert refused["status"] == "tool_execution_failed"
