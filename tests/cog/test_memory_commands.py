"""`/memory` and `/tomori memory` through a bot of each library, on SQLite and PostgreSQL: a
member lists, exports and forgets what is remembered of them (never another member's), a
forget-all leaves nothing of it in the database (rows and search entries) nor in the next
request; a member's or a server's "off" makes the model's remember fail and hides what was
remembered; a server's admins list and forget its memories; a long list is shown a page at a
time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cog.test_memories import (
    last_request,
    remember,
    saved_elsewhere,
    tool_results,
)
from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import SHORT_BUDGETS, chain_for, settings_for
from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer
from tests.support.tomori_commands import said
from tests.support.world import CHANNEL_ID, GUILD_ID, Person
from tomori.memory import MemoryStore, Place, Scope
from tomori.memory.store import Bounds

ALICE = str(Person.ALICE.id)


async def save(bot: ChatBot, llm_server: LLMServer, by: Person, *facts: tuple[str, str]) -> None:
    """`by` asks, and the model remembers each (text, about) of `facts`."""
    calls = [remember(text, about, call_id=f"r{n}") for n, (text, about) in enumerate(facts)]
    llm_server.script(*calls, answer("Noted."))
    await bot.say(f"{bot.mention()} please remember this", by=by)
    await bot.settled()


async def ids_of(database: DatabaseUnderTest, text: str) -> list[int]:
    rows = await database.rows("SELECT memory_id FROM memories WHERE text = ?", (text,))
    return [int(memory_id) for (memory_id,) in rows]


async def traces(database: DatabaseUnderTest, word: str) -> list[Any]:
    """Whatever the database still holds of `word`: rows, and search entries."""
    found: list[Any] = await database.rows(
        "SELECT memory_id FROM memories WHERE text LIKE ?", (f"%{word}%",)
    )
    if database.engine == "sqlite":
        query = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?"
        found += await database.rows(query, (word,))
        found += await database.rows(
            "SELECT text FROM memories_fts WHERE text LIKE ?", (f"%{word}%",)
        )
        blocks = await database.rows("SELECT block FROM memories_fts_data")
        found += [block for (block,) in blocks if word.encode() in bytes(block or b"")]
    else:
        query = "SELECT memory_id FROM memories WHERE search @@ to_tsquery('simple', ?)"
        found += await database.rows(query, (word,))
    return found


async def test_forget_all_leaves_nothing_of_a_member_and_another_member_reaches_none_of_it(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    await saved_elsewhere(database)  # Alice's, in another server and in her DMs
    await save(
        bot,
        llm_server,
        Person.ALICE,
        ("Alice keeps a gecko named Zorblax", "member"),
        ("Alice organises the Zorblax fan club here", "server"),
    )
    await save(bot, llm_server, Person.BOB, ("Bob keeps a zebra", "member"))
    # Bob is shown none of Alice's, and cannot forget them.
    _, listed = said(await bot.memory("list", by=Person.BOB))
    assert "Bob keeps a zebra" in listed
    assert "Zorblax" not in listed
    [gecko] = await ids_of(database, "Alice keeps a gecko named Zorblax")
    _, refused = said(await bot.memory("forget", by=Person.BOB, id=gecko))
    assert f"You have no memory #{gecko}" in refused
    assert await ids_of(database, "Alice keeps a gecko named Zorblax") == [gecko]
    # Alice sees hers, wherever they were saved, and takes them as a file.
    _, mine = said(await bot.memory("list"))
    for text in ("gecko named Zorblax", "Zorblax fan club", "plum wine", "diary"):
        assert text in mine
    assert "zebra" not in mine
    exported = await bot.memory("export")
    rows = json.loads(exported["files"]["memories.json"])["memories"]
    assert len(rows) == 5
    assert {row["text"] for row in rows} >= {"Alice keeps a gecko named Zorblax"}
    # Forget-all: nothing of it is left, in any table or search entry.
    _, gone = said(await bot.memory("forget-all"))
    assert "5 memories forgotten" in gone
    for word in ("Zorblax", "gecko", "diary", "plum"):
        assert await traces(database, word) == [], word
    assert await database.rows("SELECT member_id FROM memories WHERE member_id = ?", (ALICE,)) == []
    assert await database.rows("SELECT text FROM memories") == [("Bob keeps a zebra",)]
    llm_server.script(answer("Hello again."))
    await bot.say(f"{bot.mention()} what do you know about Zorblax and my gecko?")
    await bot.settled()
    assert "Zorblax fan club" not in last_request(llm_server)
    assert "named Zorblax" not in last_request(llm_server)


async def test_a_member_who_turns_memories_off_is_remembered_nothing_until_on_again(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    await save(bot, llm_server, Person.ALICE, ("Alice plays the oboe", "member"))
    _, off = said(await bot.memory("off"))
    assert "off for you" in off
    await save(bot, llm_server, Person.ALICE, ("Alice lives in Kyoto", "member"))
    (result,) = tool_results(llm_server)
    assert "turned memories off" in result["reason"]
    assert "Alice plays the oboe" not in last_request(llm_server)  # what was is not shown
    assert await database.rows("SELECT text FROM memories") == [("Alice plays the oboe",)]
    await bot.memory("on")
    llm_server.script(answer("The oboe."))
    await bot.say(f"{bot.mention()} which instrument do I play?")
    await bot.settled()
    assert "Alice plays the oboe" in last_request(llm_server)


async def test_a_servers_admins_list_forget_and_turn_off_its_memories(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    await saved_elsewhere(database)
    await save(
        bot,
        llm_server,
        Person.BOB,
        ("Bob hosts the quiz", "member"),
        ("The quiz is on Tuesdays", "server"),
    )
    _, listed = said(await bot.tomori("memory list"))
    assert "Bob hosts the quiz" in listed
    assert "The quiz is on Tuesdays" in listed
    assert "plum wine" not in listed  # another server's
    assert "diary" not in listed  # a direct message's
    [quiz] = await ids_of(database, "The quiz is on Tuesdays")
    [elsewhere] = await ids_of(database, "The other server meets every morning at six")
    _, refused = said(await bot.tomori("memory forget", id=elsewhere))
    assert f"no memory #{elsewhere}" in refused
    _, forgotten = said(await bot.tomori("memory forget", id=quiz))
    assert f"#{quiz} is forgotten" in forgotten
    assert await traces(database, "Tuesdays") == []
    await bot.tomori("memory off")
    await save(bot, llm_server, Person.BOB, ("Bob likes trivia", "member"))
    (result,) = tool_results(llm_server)
    assert "this server turned memories off" in result["reason"]
    assert "Bob hosts the quiz" not in last_request(llm_server)
    await bot.tomori("memory on")
    llm_server.script(answer("The quiz."))
    await bot.say(f"{bot.mention()} what do I host?", by=Person.BOB)
    await bot.settled()
    assert "Bob hosts the quiz" in last_request(llm_server)


async def test_memory_is_for_every_member_in_servers_and_direct_messages(
    llm_server: LLMServer, open_bot: OpenBot, tmp_path: Path
) -> None:
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server))
    registered = bot.registered("memory")
    assert not registered.default_member_permissions
    assert not registered.guild_only
    assert registered.options == {"list", "forget", "forget-all", "off", "on", "export"}


async def test_an_admin_turns_a_memory_tool_off_in_a_channel_as_any_tool(
    llm_server: LLMServer, open_bot: OpenBot, tmp_path: Path
) -> None:
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server))
    _, listed = said(await bot.tomori("tools"))
    assert "remember (built-in): on" in listed
    assert "forget (built-in): on" in listed
    await bot.tomori("tools", name="remember", offered=False)
    llm_server.script(answer("Okay."))
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    offered = [tool["function"]["name"] for tool in llm_server.requests[-1].body["tools"]]
    assert offered == ["current_time", "read_message", "forget"]


async def test_a_long_list_is_shown_a_page_at_a_time_so_every_number_can_be_read(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    store = MemoryStore(await database.open(), Bounds(300, 100))
    here = Place(str(GUILD_ID), str(CHANNEL_ID), ALICE)
    for n in range(40):  # near the bound on a memory's length, as a chatty model saves them
        await store.save(here, Scope.MEMBER, f"fact{n:02d}: " + "long words " * 26)
    for command in ("/memory list", "/tomori memory list"):
        first = await listing(bot, command)
        assert first.endswith(f"page 1 of 4: `{command} page:2`")
        pages = [first] + [await listing(bot, command, page=n) for n in (2, 3, 4)]
        assert pages[1].endswith(f"page 2 of 4: `{command} page:3`")
        assert pages[3].endswith("page 4 of 4")
        assert all(len(page) <= 4_096 for page in pages)  # each fits an embed
        shown = "\n".join(pages)
        assert [n for n in range(40) if f"fact{n:02d}:" in shown] == list(range(40))
        past = await listing(bot, command, page=5)
        assert past == "There is no page 5: the last is page 4."


async def listing(bot: ChatBot, command: str, page: int | None = None) -> str:
    """What `command` (`/memory list` or `/tomori memory list`) answers, given `page` (None:
    left out)."""
    given = {} if page is None else {"page": page}
    if command == "/memory list":
        return said(await bot.memory("list", by=Person.ALICE, **given))[1]
    return said(await bot.tomori("memory list", **given))[1]
