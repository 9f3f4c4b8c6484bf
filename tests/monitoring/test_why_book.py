"""What "Why no answer?" keeps of each message, on SQLite and PostgreSQL: the steps in the order
they were noted, read back by another connection (another process, a restart); at most
`MAX_STEPS` a message and `MAX_ROWS` in all; gone after a day, by the retention sweep."""

from __future__ import annotations

import pytest

from tests.policy.test_retention import config_of, opened_now
from tests.support.databases import DatabaseUnderTest
from tomori.monitoring import why_book
from tomori.monitoring.why import Asked, Fate, Step
from tomori.monitoring.why_book import KEPT_S, MAX_STEPS, WhyBook
from tomori.policy.retention import sweep

ASKED = Asked("m-1", "c-1", "u-1")


async def test_a_messages_steps_are_read_back_in_order_by_another_connection_and_bounded(
    database: DatabaseUnderTest,
) -> None:
    opened, _ = await opened_now(database)
    book = WhyBook(opened)
    book.note(ASKED, Step(Fate.REFUSED, "cooldown", until=1_800_000_000.5))
    book.note(ASKED, Step(Fate.TRIED, "openai:first", "429"))
    for _ in range(MAX_STEPS + 5):  # a message retried without end
        book.note(ASKED, Step(Fate.QUEUED))
    book.note(Asked("m-2", "c-1", None), Step(Fate.DELIVERED, count=2))
    await book.flushed()

    reader = WhyBook(await database.open())  # another process's
    account = await reader.account("m-1")
    assert account is not None
    assert account.askers == frozenset({"u-1"})
    assert len(account.steps) == MAX_STEPS
    assert account.steps[:2] == (
        Step(Fate.REFUSED, "cooldown", until=1_800_000_000.5),
        Step(Fate.TRIED, "openai:first", "429"),
    )
    other = await reader.account("m-2")
    assert other is not None
    assert other.steps == (Step(Fate.DELIVERED, count=2),)
    assert other.askers == frozenset()
    assert await reader.account("never-seen") is None


async def test_steps_go_after_a_day_and_past_the_overall_bound_the_oldest_first(
    database: DatabaseUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened, now = await opened_now(database)
    for n, age in enumerate([KEPT_S + 60, KEPT_S - 60, 60, 30, 10]):
        await database.execute(
            "INSERT INTO message_fates (message_id, channel_id, asker_id, fate, subject,"
            " outcome, until_at, count, recorded_at) VALUES (?, 'c', 'u', 'queued', '', '',"
            " NULL, 0, ?)",
            (f"m-{n}", now - age),
        )
    monkeypatch.setattr(why_book, "MAX_ROWS", 3)
    swept = await sweep(opened, database.base, config_of(database))
    assert swept.message_fates == 2  # a day old, then the oldest past the bound
    kept = await database.rows("SELECT message_id FROM message_fates ORDER BY id")
    assert kept == [("m-2",), ("m-3",), ("m-4",)]
