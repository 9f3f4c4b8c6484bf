"""A turn's own user interrupts it, on both engines and across processes: a follow-up stops
the turn and is served next, in place of their earlier follow-ups, up to the limit in a row;
a stop word stops it and clears only their queue (even what is still on its way to it), before
the channel is handed on. Others' messages queue as before."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import pytest

from tests.support.databases import DatabaseUnderTest
from tests.support.registries import OpenRegistry, registries
from tests.support.turns import HeldTurns
from tomori.locks import Admission, ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.locks.rules import MAX_FOLLOW_UPS, FollowUpRow, takes_follow_up
from tomori.locks.vocabulary import KillReason

CHANNEL = "100"
ALICE, BOB = "7", "8"


def said(message_id: str, by: str = ALICE, key: str | None = "bot") -> Trigger:
    return Trigger(CHANNEL, message_id, requester_id=by, follow_up_key=key)


@pytest.fixture
async def open_locks(database: DatabaseUnderTest) -> AsyncIterator[OpenRegistry]:
    async with registries(database) as factory:
        yield factory


async def recording_kills(
    open_locks: OpenRegistry,
) -> tuple[ChannelLocks, HeldTurns, list[KillReason]]:
    kills: list[KillReason] = []

    async def register_kill(turn: Turn, guard: TurnGuard) -> None:
        guard.set_kill(kills.append)

    turns = HeldTurns(register_kill)
    return await open_locks(turns), turns, kills


async def heard(kills: list[KillReason], count: int = 1) -> None:
    async with asyncio.timeout(5):
        while len(kills) < count:  # noqa: ASYNC110 - the owner reads requests on its cadence
            await asyncio.sleep(0.01)


async def test_a_follow_up_in_another_process_stops_the_turn_and_is_served_next(
    open_locks: OpenRegistry, database: DatabaseUnderTest
) -> None:
    owner, turns, kills = await recording_kills(open_locks)
    other = await open_locks(HeldTurns())
    await owner.submit(said("m1"))
    await turns.next_started()
    assert await other.submit(said("bob", by=BOB)) is Admission.QUEUED
    assert await other.submit(said("f1")) is Admission.FOLLOW_UP
    assert await other.submit(said("f2")) is Admission.FOLLOW_UP  # replaces f1
    await heard(kills)
    assert kills == [KillReason.FOLLOW_UP]
    assert await database.rows("SELECT message_id FROM queued_triggers ORDER BY id") == [
        ("f2",),
        ("bob",),
    ]
    turns.let_finish("m1")
    follow_up = await turns.next_started()
    assert (follow_up.trigger.message_id, follow_up.trigger.follow_ups) == ("f2", 1)
    turns.let_finish("f2")
    turns.let_finish("bob")
    await owner.wait_idle(CHANNEL)
    assert turns.finished == ["m1", "f2", "bob"]


async def test_follow_ups_in_a_row_stop_at_the_limit_and_then_queue(
    open_locks: OpenRegistry,
) -> None:
    locks, turns, kills = await recording_kills(open_locks)
    await locks.submit(said("m0"))
    await turns.next_started()
    for n in range(1, MAX_FOLLOW_UPS + 1):
        assert await locks.submit(said(f"m{n}")) is Admission.FOLLOW_UP
        turns.let_finish(f"m{n - 1}")
        assert (await turns.next_started()).trigger.follow_ups == n
    assert await locks.submit(said("past")) is Admission.QUEUED
    assert kills == [KillReason.FOLLOW_UP] * MAX_FOLLOW_UPS
    turns.let_finish(f"m{MAX_FOLLOW_UPS}")
    assert (await turns.next_started()).trigger.follow_ups == 0
    turns.let_finish("past")
    await locks.wait_idle(CHANNEL)


async def test_a_stop_word_in_another_process_stops_the_turn_and_clears_only_its_users_queue(
    open_locks: OpenRegistry, database: DatabaseUnderTest
) -> None:
    owner, turns, kills = await recording_kills(open_locks)
    other = await open_locks(HeldTurns())
    await owner.submit(said("m1", key=None))
    await turns.next_started()
    await other.submit(said("mine", key=None))
    await other.submit(said("bob", by=BOB, key=None))
    assert not await other.stop_for(CHANNEL, BOB)  # not Bob's turn: an ordinary message
    assert await other.stop_for(CHANNEL, ALICE)
    await heard(kills)
    assert kills == [KillReason.STOP_WORD]
    assert await other.submit(said("after", by=BOB, key=None)) is Admission.QUEUED
    assert await database.rows("SELECT message_id FROM queued_triggers ORDER BY id") == [
        ("bob",),
        ("after",),
    ]
    turns.let_finish("m1")
    turns.let_finish("bob")
    turns.let_finish("after")
    await owner.wait_idle(CHANNEL)
    assert turns.finished == ["m1", "bob", "after"]


def test_only_the_turns_user_addressing_it_alike_follows_up() -> None:
    lock = FollowUpRow(ALICE, "bot", 0, None)
    assert takes_follow_up(lock, ALICE, "bot")
    assert not takes_follow_up(lock, BOB, "bot")
    assert not takes_follow_up(lock, ALICE, "personas:luna")
    assert not takes_follow_up(lock, ALICE, None)  # follow-ups off for the message
    assert not takes_follow_up(FollowUpRow(ALICE, None, 0, None), ALICE, "bot")
    assert not takes_follow_up(FollowUpRow(ALICE, "bot", MAX_FOLLOW_UPS, None), ALICE, "bot")
    assert not takes_follow_up(FollowUpRow(ALICE, "bot", 0, "stop_word"), ALICE, "bot")
    assert takes_follow_up(FollowUpRow(ALICE, "bot", 0, "follow_up"), ALICE, "bot")


@asynccontextmanager
async def ending_when_stopped(
    database: DatabaseUnderTest,
) -> AsyncIterator[tuple[ChannelLocks, HeldTurns, list[list[Trigger]]]]:
    """A registry whose turns end as soon as they are stopped, and what each stop cleared
    (as the cog is told it, to show it)."""
    turns: HeldTurns
    cleared: list[list[Trigger]] = []

    async def ends_when_stopped(turn: Turn, guard: TurnGuard) -> None:
        guard.set_kill(lambda reason: turns.let_finish(turn.trigger.message_id or ""))

    async def tell_cleared(triggers: Sequence[Trigger], by: str | None) -> None:
        cleared.append(list(triggers))

    turns = HeldTurns(ends_when_stopped)
    settings = database.settings()
    db = await database.open()
    locks = ChannelLocks(lock_backend(db, settings), settings, turns, tell_cleared=tell_cleared)
    await locks.start()
    try:
        yield locks, turns, cleared
    finally:
        await locks.close()  # its database is closed with the test's


async def idle(locks: ChannelLocks) -> None:
    """The channel's turns all ended (one the test never lets finish fails it, not hangs it)."""
    async with asyncio.timeout(5):
        await locks.wait_idle(CHANNEL)


async def test_a_stop_word_right_behind_its_users_queued_messages_hands_the_channel_to_none(
    database: DatabaseUnderTest,
) -> None:
    """Her answer ends at once when she says stop, while her two messages before it are still
    being admitted: the channel goes to none of them (the stop clears them first), not even
    to be stopped before it starts."""
    async with ending_when_stopped(database) as (locks, turns, cleared):
        await locks.submit(said("m1", key=None))
        await turns.next_started()
        queued = [asyncio.create_task(locks.submit(said(m, key=None))) for m in ("q1", "q2")]
        assert await locks.stop_for(CHANNEL, ALICE)
        bobs = await locks.submit(said("bob", by=BOB, key=None))  # as her turn hands it on
        assert bobs in (Admission.STARTED, Admission.QUEUED)
        await asyncio.gather(*queued)
        turns.let_finish("bob")
        await idle(locks)
        assert turns.started_ids == ["m1", "bob"]
        assert [t.message_id for told in cleared for t in told] == ["q1", "q2"]


async def test_a_message_still_on_its_way_when_its_users_stop_word_stopped_them_is_cleared(
    database: DatabaseUnderTest,
) -> None:
    """A message of hers from before her stop word that reaches the lock store only after it
    (its limits were being read) is cleared as her queue was, and shown so; one she sends
    after the stop word is answered."""
    async with ending_when_stopped(database) as (locks, turns, cleared):
        await locks.submit(said("m1", key=None))
        await turns.next_started()
        on_its_way = said("late", key=None)
        assert await locks.stop_for(CHANNEL, ALICE)
        after = said("after", key=None)
        assert await locks.submit(on_its_way) is Admission.IGNORED
        await idle(locks)
        assert await locks.submit(after) is Admission.STARTED
        turns.let_finish("after")
        await idle(locks)
        assert turns.started_ids == ["m1", "after"]
        assert [t.message_id for told in cleared for t in told] == ["late"]
