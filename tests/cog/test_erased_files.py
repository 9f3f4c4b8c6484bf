"""What an erase leaves on disk, through a bot of each library on SQLite: after each way a
memory is forgotten (the member's `/memory forget` and `forget-all`, the admins' `/tomori
memory forget`, the model's `forget`) and after a summary is dropped by a forget-all, no byte
of the erased words is in the database's files (the file, its `-wal` and `-shm`), as
docs/privacy.md promises; the test reads the files themselves, not the tables."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.cog.test_memory_commands import ids_of, save
from tests.cog.test_memory_safety import forget
from tests.cog.test_summaries import eventually, summarizer, summary_text, windowed
from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import SHORT_BUDGETS, chain_for
from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer
from tests.support.tomori_commands import said
from tests.support.world import Person

__all__ = ["summarizer"]  # the fixture, used below

SECRET = "Alice hides the key under the zanzibarqux florptastic"
WORDS = (b"zanzibarqux", b"florptastic")

Erase = Callable[[ChatBot, LLMServer, int], Awaitable[None]]


async def member_forgets(bot: ChatBot, llm_server: LLMServer, memory_id: int) -> None:
    _, text = said(await bot.memory("forget", id=memory_id))
    assert f"#{memory_id}" in text


async def member_forgets_all(bot: ChatBot, llm_server: LLMServer, memory_id: int) -> None:
    _, text = said(await bot.memory("forget-all"))
    assert "1 memor" in text


async def admin_forgets(bot: ChatBot, llm_server: LLMServer, memory_id: int) -> None:
    _, text = said(await bot.tomori("memory forget", id=memory_id))
    assert f"#{memory_id} is forgotten" in text


async def model_forgets(bot: ChatBot, llm_server: LLMServer, memory_id: int) -> None:
    llm_server.script(forget(memory_id, "f1"), answer("Forgotten."))
    await bot.say(f"{bot.mention()} please forget where the key is")
    await bot.settled()


def on_disk(database: DatabaseUnderTest) -> dict[str, list[bytes]]:
    """Each of the database's files, with the erased words its bytes still hold."""
    path = Path(database.settings().db_path)
    files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
    held = {file.name: file.read_bytes().lower() for file in files if file.exists()}
    return {name: [word for word in WORDS if word in data] for name, data in held.items()}


def sqlite_only(database: DatabaseUnderTest) -> None:
    if database.engine != "sqlite":
        pytest.skip("the files read are SQLite's; PostgreSQL's are the server's")


@pytest.mark.parametrize(
    "erase",
    [member_forgets, member_forgets_all, admin_forgets, model_forgets],
    ids=["memory-forget", "memory-forget-all", "tomori-memory-forget", "model-forget"],
)
async def test_no_word_of_a_forgotten_memory_stays_in_the_database_files(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot, erase: Erase
) -> None:
    sqlite_only(database)
    bot = await open_bot(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    await save(bot, llm_server, Person.ALICE, (SECRET, "member"))
    [memory_id] = await ids_of(database, SECRET)
    assert any(on_disk(database).values())  # the words were written, so the scan can see them
    await erase(bot, llm_server, memory_id)
    assert await ids_of(database, SECRET) == []
    assert on_disk(database) == {name: [] for name in on_disk(database)}


async def test_no_word_of_a_summary_dropped_by_forget_all_stays_in_the_database_files(
    database: DatabaseUnderTest, summarizer: LLMServer, open_bot: OpenBot
) -> None:
    sqlite_only(database)
    bot = await open_bot(windowed(database), chain_for(summarizer))
    for n in range(3):
        await bot.say(f"my key is under the zanzibarqux florptastic {n}", by=Person.BOB)
    for n in range(3):
        await bot.say(f"chatter {n}")
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    await eventually(lambda: _holds(database))
    await bot.memory("forget-all", by=Person.BOB)
    assert await database.rows("SELECT text FROM channel_summaries") == []
    assert on_disk(database) == {name: [] for name in on_disk(database)}


async def _holds(database: DatabaseUnderTest) -> bool:
    return "zanzibarqux" in await summary_text(database)
