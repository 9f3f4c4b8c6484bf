"""The memory store on SQLite and PostgreSQL: each read and delete keeps to its place's scope
(another server, a direct message, another member, another persona are refused by the query),
and a forget leaves nothing of the memory in the tables nor in their search entries."""

from __future__ import annotations

import pytest

from tests.support.databases import DatabaseUnderTest
from tomori.memory import MemoryRefused, MemoryStore, Place, Scope
from tomori.memory.store import Bounds, Refusal

ALICE, BOB = "101", "102"
HERE = Place("1", "11", ALICE, "mika")


async def opened(
    database: DatabaseUnderTest, chars: int = 300, per_scope: int = 100
) -> MemoryStore:
    return MemoryStore(await database.open(), Bounds(chars, per_scope))


async def texts(store: MemoryStore, place: Place, words: str = "") -> list[str]:
    return [memory.text for memory in await store.recall(place, words, 10)]


async def test_a_place_sees_only_what_its_scopes_let_it(database: DatabaseUnderTest) -> None:
    store = await opened(database)
    await store.save(HERE, Scope.MEMBER, "alice likes green tea")
    await store.save(HERE, Scope.SERVER, "the server plays chess")
    await store.save(HERE, Scope.PERSONA, "mika once lost at chess")
    await store.save(Place("2", "21", ALICE), Scope.MEMBER, "alice in another server: tea")
    await store.save(Place(None, "31", ALICE), Scope.DM, "alice's secret, said in a DM: tea")
    assert await texts(store, HERE) == [  # no words to find by: the newest first
        "mika once lost at chess",
        "the server plays chess",
        "alice likes green tea",
    ]
    bob_here = Place("1", "12", BOB)  # another member, the bot speaking
    assert await texts(store, bob_here, "tea chess") == ["the server plays chess"]
    assert await texts(store, Place("1", "11", ALICE, "rin"), "chess") == [
        "the server plays chess",  # what the words find first, then the newest
        "alice likes green tea",
    ]
    assert await texts(store, Place(None, "31", ALICE), "tea") == [
        "alice's secret, said in a DM: tea"
    ]
    assert await texts(store, Place(None, "32", BOB), "tea secret") == []
    assert not await store.forget_here(bob_here, 1)  # Alice's, which Bob's turn cannot see


async def test_words_find_the_relevant_memories_before_the_newest(
    database: DatabaseUnderTest,
) -> None:
    store = await opened(database)
    await store.save(HERE, Scope.MEMBER, "alice's cat is called Mochi")
    for n in range(5):
        await store.save(HERE, Scope.MEMBER, f"alice said thing {n}")
    found = [m.text for m in await store.recall(HERE, "What is my cat's name? \"NEAR(", 2)]
    assert found == ["alice's cat is called Mochi", "alice said thing 4"]


async def test_bounds_and_refusals_fail_a_save_with_the_reason(
    database: DatabaseUnderTest,
) -> None:
    store = await opened(database, chars=10, per_scope=1)
    for text, reason in (("x" * 11, "at most 10 characters"), ("  ", "nothing to remember")):
        with pytest.raises(MemoryRefused, match=reason):
            await store.save(HERE, Scope.MEMBER, text)
    await store.save(HERE, Scope.MEMBER, "short one")
    with pytest.raises(MemoryRefused, match="already keeps 1"):
        await store.save(HERE, Scope.MEMBER, "another")
    await store.save(HERE, Scope.SERVER, "own scope")  # another scope has its own count
    await store.refuse(Refusal.SERVER, "1", True)
    assert await texts(store, HERE) == []
    with pytest.raises(MemoryRefused, match="server turned memories off"):
        await store.save(HERE, Scope.PERSONA, "mika")
    await store.refuse(Refusal.SERVER, "1", False)
    assert await texts(store, HERE) == ["own scope", "short one"]


async def test_forget_all_leaves_nothing_in_the_rows_nor_the_search_entries(
    database: DatabaseUnderTest,
) -> None:
    store = await opened(database)
    await store.save(HERE, Scope.MEMBER, "alice's password hint is zebracorn")
    await store.save(Place(None, "31", ALICE), Scope.DM, "zebracorn again, in a DM")
    await store.save(Place("1", "11", BOB), Scope.MEMBER, "bob likes zebras")
    assert await store.forget_all(ALICE) == 2
    assert await database.rows("SELECT text FROM memories") == [("bob likes zebras",)]
    if database.engine == "sqlite":
        assert await database.rows("SELECT text FROM memories_fts") == [("bob likes zebras",)]
        matched = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'zebracorn'"
        assert await database.rows(matched) == []
        blobs = await database.rows("SELECT block FROM memories_fts_data")
        assert not any(b"zebracorn" in bytes(block or b"") for (block,) in blobs)
    else:
        found = "SELECT memory_id FROM memories WHERE search @@ to_tsquery('simple', 'zebracorn')"
        assert await database.rows(found) == []
    assert await texts(store, HERE, "zebracorn") == []


async def test_a_text_its_scope_keeps_already_is_not_kept_twice(
    database: DatabaseUnderTest,
) -> None:
    store = await opened(database, per_scope=1)
    first = await store.save(HERE, Scope.MEMBER, "alice likes  green tea")
    again = await store.save(HERE, Scope.MEMBER, "alice likes green tea")  # not past the bound
    assert again.memory_id == first.memory_id
    other = await store.save(Place("1", "11", BOB), Scope.MEMBER, "alice likes green tea")
    assert other.memory_id != first.memory_id  # Bob's scope keeps its own
    assert len(await database.rows("SELECT memory_id FROM memories")) == 2
