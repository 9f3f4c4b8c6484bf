"""Memories through a bot of each library, on SQLite and PostgreSQL: what the model remembers
about a member is shown to it in a later turn answering that member, after the window moved
past what was said, in that server only; never to a turn answering another member, nor in a
server other than the one it was saved in, nor (a direct message's) in any server. Every save
is told in the channel; a member who said no is remembered nothing, and the model is told why;
a call whose arguments the tools do not take (an id of 1.5 or true, an `about` of another
name, a number as the text) fails for the model with what they take, and changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.bots import OpenBot
from tests.support.cog_settings import SHORT_BUDGETS, chain_for, settings_for
from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import OpenRestBot
from tests.support.scripts import answer, tool_call
from tests.support.world import CHANNEL_ID, GUILD_ID, Person
from tomori.memory import MemoryStore, Place, Scope
from tomori.memory.store import Bounds

REMEMBERED = "Remembered"  # the title of the line every save is told in
OTHER_GUILD = str(GUILD_ID + 1)
ALICE_DM = "77"


def remember(text: str, about: str = "member", call_id: str = "r1") -> Any:
    return tool_call("remember", json.dumps({"text": text, "about": about}), call_id=call_id)


def last_request(llm_server: LLMServer) -> str:
    """Every message the model server was last sent, as one text."""
    return json.dumps(llm_server.requests[-1].body["messages"], ensure_ascii=False)


def tool_results(llm_server: LLMServer) -> list[dict[str, Any]]:
    last = llm_server.requests[-1].body["messages"]
    return [json.loads(m["content"]) for m in last if m["role"] == "tool"]


async def saved_elsewhere(database: DatabaseUnderTest) -> None:
    """What Alice's turns saved in another server and in her direct messages with the bot, as
    those turns' tools save them."""
    store = MemoryStore(await database.open(), Bounds(300, 100))
    alice = str(Person.ALICE.id)
    other = Place(OTHER_GUILD, "901", alice)
    await store.save(other, Scope.MEMBER, "Alice drinks plum wine every morning (other server)")
    await store.save(other, Scope.SERVER, "The other server meets every morning at six")
    dm = Place(None, ALICE_DM, alice)
    await store.save(dm, Scope.DM, "In her DMs Alice said every morning she reads her diary")


async def test_a_fact_remembered_about_a_member_is_shown_in_their_later_turns_here_only(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    settings = database.settings(**SHORT_BUDGETS, history_limit=3)
    bot = await open_bot(settings, chain_for(llm_server))
    await saved_elsewhere(database)
    said = "I drink hojicha every morning, remember that"
    llm_server.script(remember("Alice drinks hojicha every morning"), answer("Noted!"))
    await bot.say(f"{bot.mention()} {said}")
    await bot.settled()
    assert tool_results(llm_server)[0]["result"]["scope"] == "member"
    assert "Noted!" in await bot.contents()
    assert REMEMBERED in await bot.embeds()  # the save is told in the channel
    for n in range(4):  # the window (3 messages) moves past what Alice said
        await bot.say(f"chatter {n}", by=Person.BOB)
    llm_server.script(answer("Hojicha!"))
    await bot.say(f"{bot.mention()} what do I drink in the morning?")
    await bot.settled()
    sent = last_request(llm_server)
    assert said not in sent
    assert "Alice drinks hojicha every morning" in sent
    # Never another server's, nor a direct message's, whatever their words match.
    assert "plum wine" not in sent
    assert "at six" not in sent
    assert "diary" not in sent
    # Another member's turn here is not shown what is about Alice.
    llm_server.script(answer("No idea."))
    await bot.say(f"{bot.mention()} what does Alice drink every morning?", by=Person.BOB)
    await bot.settled()
    assert 'hojicha every morning"' not in last_request(llm_server).replace("\\", "")
    assert "Alice drinks hojicha" not in last_request(llm_server)


async def test_what_is_remembered_about_the_server_is_shown_to_every_member_there(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    llm_server.script(remember("Movie night is on Fridays", about="server"), answer("Got it."))
    await bot.say(f"{bot.mention()} our movie night is on Fridays")
    await bot.settled()
    llm_server.script(answer("Fridays."))
    await bot.say(f"{bot.mention()} when is movie night?", by=Person.BOB)
    await bot.settled()
    assert "Movie night is on Fridays" in last_request(llm_server)
    rows = await database.rows("SELECT scope, guild_id, owner_id, member_id FROM memories")
    assert rows == [("server", str(GUILD_ID), "", str(Person.ALICE.id))]
    assert CHANNEL_ID  # the channel is the world's one


async def test_a_member_who_said_no_is_remembered_nothing_and_the_model_is_told_why(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    await database.execute(
        "INSERT INTO memory_refusals (kind, id, since) VALUES ('member', ?, 0)",
        (str(Person.ALICE.id),),
    )
    llm_server.script(remember("Alice lives in Osaka"), answer("Okay."))
    await bot.say(f"{bot.mention()} I live in Osaka, remember it")
    await bot.settled()
    (result,) = tool_results(llm_server)
    assert result["status"] == "tool_execution_failed"
    assert "turned memories off" in result["reason"]
    assert await database.rows("SELECT * FROM memories") == []
    assert REMEMBERED not in await bot.embeds()


async def test_a_remember_past_the_bounds_fails_for_the_model_with_the_reason(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    settings = database.settings(**SHORT_BUDGETS, memory_chars=20, memories_per_scope=1)
    bot = await open_bot(settings, chain_for(llm_server))
    llm_server.script(
        remember("Alice likes a very long list of things", call_id="a"),
        remember("Alice likes tea", call_id="b"),
        remember("Alice likes cats", call_id="c"),
        answer("Okay."),
    )
    await bot.say(f"{bot.mention()} remember what I like")
    await bot.settled()
    too_long, kept, too_many = tool_results(llm_server)
    assert "at most 20 characters" in too_long["reason"]
    assert kept["result"]["scope"] == "member"
    assert "already keeps 1 memories" in too_many["reason"]
    assert await database.rows("SELECT text FROM memories") == [("Alice likes tea",)]


async def test_memories_the_database_cannot_read_leave_the_turn_answered_without_them(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    await database.execute("DROP TABLE memory_refusals")  # every memory read now fails
    llm_server.script(answer("Still here."))
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    assert "Still here." in await bot.contents()
    assert "what you remember here" not in last_request(llm_server)


async def test_a_direct_messages_memory_stays_in_it_and_a_servers_stays_out_of_it(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    llm_server.script(remember("Alice is planning a surprise party for Bob"), answer("Secret!"))
    dm = await bot.say_directly("I'm planning a surprise party for Bob, remember it")
    assert tool_results(llm_server)[0]["result"]["scope"] == "dm"
    llm_server.script(remember("Alice's favourite colour is teal", call_id="r2"), answer("Teal."))
    await bot.say(f"{bot.mention()} my favourite colour is teal, and is there a surprise party?")
    await bot.settled()
    assert "surprise party for Bob" not in last_request(llm_server)  # the DM's, in a server
    llm_server.script(answer("Yes, the party."))
    await bot.say_directly("what surprise am I planning? and what is my favourite colour?")
    sent = last_request(llm_server)
    assert "Alice is planning a surprise party for Bob" in sent
    assert "teal" not in sent  # the server's, in a DM
    rows = await database.rows("SELECT scope, guild_id, owner_id FROM memories ORDER BY memory_id")
    assert rows == [("dm", "", str(dm)), ("member", str(GUILD_ID), str(Person.ALICE.id))]


async def test_a_personas_own_memory_is_shown_to_it_alone(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path, history_memory_channels=0)
    bot = await open_rest_bot(settings, chain_for(llm_server))
    bot.allow_webhooks()
    await bot.persona("add", name="Aria", prompt="You are Aria, a bard.")
    await bot.persona("add", name="Bex", prompt="You are Bex, a smith.")
    llm_server.script(remember("I lost my lute in Osaka", about="self"), answer("Sad story."))
    bot.say("aria, what happened to your lute?")
    await bot.settled(CHANNEL_ID)
    assert tool_results(llm_server)[0]["result"]["scope"] == "persona"
    llm_server.script(answer("In Osaka."))
    bot.say("aria, where was the lute lost?")
    await bot.settled(CHANNEL_ID)
    assert "I lost my lute in Osaka" in last_request(llm_server)
    for asked in ("bex, where did the lute get lost?", f"{bot.mention()} where was the lute lost?"):
        llm_server.script(answer("No idea."))
        bot.say(asked)
        await bot.settled(CHANNEL_ID)
        assert "I lost my lute in Osaka" not in last_request(llm_server), asked


async def test_a_call_the_memory_tools_do_not_take_fails_for_the_model_saying_what_they_take(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    llm_server.script(remember("Alice likes tea"), answer("Noted."))
    await bot.say(f"{bot.mention()} remember that I like tea")
    await bot.settled()
    [(tea,)] = await database.rows("SELECT memory_id FROM memories")
    llm_server.script(
        tool_call("forget", json.dumps({"id": tea + 0.5}), call_id="a"),
        tool_call("forget", json.dumps({"id": True}), call_id="b"),
        tool_call("remember", json.dumps({"text": "Alice is tall", "about": "bob"}), call_id="c"),
        tool_call("remember", json.dumps({"text": 12345}), call_id="d"),
        answer("Hmm."),
    )
    await bot.say(f"{bot.mention()} do odd things")
    await bot.settled()
    fraction, boolean, about, number = tool_results(llm_server)
    assert f"{tea + 0.5} names none" in fraction["reason"]
    assert "not true" in boolean["reason"]
    assert "about is one of member, server, self" in about["reason"]
    assert '"bob"' in about["reason"]
    assert "string of words, not 12345" in number["reason"]
    assert await database.rows("SELECT memory_id, text FROM memories") == [(tea, "Alice likes tea")]
    # A number written as a string of digits, as models often quote them, is taken.
    llm_server.script(tool_call("forget", json.dumps({"id": str(tea)})), answer("Forgotten."))
    await bot.say(f"{bot.mention()} forget the tea")
    await bot.settled()
    assert tool_results(llm_server)[0]["result"] == {"forgotten": tea}
    assert await database.rows("SELECT memory_id FROM memories") == []
