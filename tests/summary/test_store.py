"""The summary store on SQLite and PostgreSQL: a channel's summary is read by its server and
channel together, never by another server's channel of the same ID nor a direct message's;
a deleted message drops only the summary that covered it; a member's forget drops every
summary that covered one of their messages, with the sources it kept, and no later fold keeps
one of theirs; a fold that began before a delete or a forget keeps nothing."""

from __future__ import annotations

from tests.support.databases import DatabaseUnderTest
from tomori.summary.store import WRITES, Said, SummaryStore, drop_member


async def test_a_summary_is_read_in_its_own_server_and_channel_alone(
    database: DatabaseUnderTest,
) -> None:
    store = SummaryStore(await database.open())
    began = await store.begin("1", "11")
    await store.save("1", "11", "Server one's talk", [Said("101", "7", "ann: hi")], began)
    began = await store.begin(None, "11")
    await store.save(None, "11", "A direct message's talk", [Said("102", "7", "ann: yo")], began)
    summary = await store.of("1", "11")
    assert summary is not None
    assert summary.text == "Server one's talk"
    assert summary.through_id == "101"
    assert await store.of("2", "11") is None  # the same channel ID in another server
    direct = await store.of(None, "11")
    assert direct is not None
    assert direct.text == "A direct message's talk"
    assert await store.of("1", "12") is None


async def test_a_deleted_message_or_a_forgotten_member_drops_the_summaries_that_covered_them(
    database: DatabaseUnderTest,
) -> None:
    opened = await database.open()
    store = SummaryStore(opened)
    for channel, text, said in (
        ("11", "ann and bob", [Said("101", "7", "a"), Said("102", "8", "b")]),
        ("12", "bob alone", [Said("201", "8", "b")]),
        ("13", "cid alone", [Said("301", "9", "c")]),
    ):
        assert await store.save("1", channel, text, said, await store.begin("1", channel))
    assert await store.drop_messages("11", ["999"]) == 0
    assert await store.drop_messages("11", ["101"]) == 1
    assert await store.of("1", "11") is None
    async with opened.transaction() as tx:
        assert await drop_member(tx, "8") == 1  # channel 12's; channel 11's went already
    rows = await database.rows("SELECT channel_id, text FROM channel_summaries")
    assert rows == [("13", "cid alone")]
    assert await database.rows("SELECT message_id FROM summary_sources") == [("301",)]


async def test_a_fold_keeps_nothing_if_its_summary_was_dropped_or_written_meanwhile(
    database: DatabaseUnderTest,
) -> None:
    store = SummaryStore(await database.open())
    first = await store.begin("1", "11")
    assert await store.save("1", "11", "first", [Said("101", "7", "a")], first)
    began = await store.begin("1", "11")
    assert await store.drop_messages("11", ["101"]) == 1  # deleted as the fold ran
    assert not await store.save("1", "11", "first, then more", [Said("102", "7", "b")], began)
    assert await store.of("1", "11") is None
    began = await store.begin("1", "11")
    assert await store.save("1", "11", "again", [Said("102", "7", "b")], began)
    again = await store.begin("1", "11")
    assert await store.save("1", "11", "and more", [Said("103", "7", "c")], again)
    assert not await store.save("1", "11", "a late fold", [Said("103", "7", "c")], again)
    latest = await store.of("1", "11")
    assert latest is not None
    assert latest.text == "and more"


async def test_a_fold_that_read_a_message_deleted_meanwhile_keeps_nothing(
    database: DatabaseUnderTest,
) -> None:
    """The channel's first fold: no summary yet covers the deleted message, so only the
    channel's count of deletes, bumped in the drop's transaction, tells the write."""
    store = SummaryStore(await database.open())
    began = await store.begin("1", "11")
    assert await store.drop_messages("11", ["101"]) == 0  # nothing covered it yet
    said = [Said("101", "7", "ann: my locker code is 4471")]
    assert not await store.save("1", "11", "ann's code is 4471", said, began)
    assert await database.rows("SELECT text FROM channel_summaries") == []
    assert await store.save("1", "12", "elsewhere", said, await store.begin("1", "12"))


async def test_a_forgotten_members_messages_are_never_folded_again(
    database: DatabaseUnderTest,
) -> None:
    opened = await database.open()
    store = SummaryStore(opened)
    began = await store.begin("1", "11")
    bob, ann = Said("101", "8", "bob: my newt is Quillon"), Said("102", "7", "ann: hi")
    async with opened.transaction(WRITES) as tx:
        await drop_member(tx, "8")  # Bob's forget-all lands as the fold runs
    assert not await store.save("1", "11", "bob's newt Quillon", [bob, ann], began)
    assert await database.rows("SELECT text FROM channel_summaries") == []
    assert await store.unforgotten([bob, ann]) == [ann]  # the next fold leaves Bob out
    again = await store.begin("1", "11")
    assert await store.save("1", "11", "ann said hi", [ann], again, through="102")
    assert await database.rows("SELECT author_id FROM summary_sources") == [("7",)]
