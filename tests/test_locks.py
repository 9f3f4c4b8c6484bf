from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tests.support.turns import HeldTurns
from tomori.config import Settings
from tomori.locks import Admission, ChannelLocks, Trigger, Turn, TurnRunner
from tomori.results import KillReason
from tomori.store import Store

OpenLocks = Callable[..., Awaitable[ChannelLocks]]
REPO_ROOT = str(Path(__file__).resolve().parents[1])
CHANNEL = "100"


def trigger(message_id: str, channel_id: str = CHANNEL, **payload: object) -> Trigger:
    return Trigger(channel_id, message_id, requester_id="7", payload=payload)


@pytest.fixture
async def open_locks(db_path: Path) -> AsyncIterator[OpenLocks]:
    opened: list[tuple[ChannelLocks, Store]] = []

    async def factory(runner: TurnRunner, settings: Settings | None = None) -> ChannelLocks:
        store = await Store.open(db_path)
        await store.migrate()
        locks = ChannelLocks(store, settings or Settings(), runner)
        await locks.start()
        opened.append((locks, store))
        return locks

    yield factory
    for locks, store in opened:
        await locks.close()
        await store.close()


async def open_recording_kills(
    open_locks: OpenLocks, settings: Settings | None = None
) -> tuple[ChannelLocks, HeldTurns, list[KillReason]]:
    """A registry whose turns register a kill callback that records each kill's reason."""
    kills: list[KillReason] = []
    registry: ChannelLocks | None = None

    async def register_kill(turn: Turn) -> None:
        assert registry is not None
        registry.set_channel_stream_kill(turn.channel_id, kills.append)

    turns = HeldTurns(register_kill)
    registry = await open_locks(turns, settings)
    return registry, turns, kills


async def rows(store: Store, sql: str) -> list[tuple[object, ...]]:
    return [tuple(row) for row in await store.fetchall(sql)]


async def test_a_busy_channel_queues_triggers_and_serves_them_in_order(
    open_locks: OpenLocks, store: Store
) -> None:
    turns = HeldTurns()
    locks = await open_locks(turns)
    assert await locks.submit(trigger("m1")) is Admission.STARTED
    assert await locks.submit(trigger("m2", note="second")) is Admission.QUEUED
    assert await locks.submit(trigger("m3")) is Admission.QUEUED
    assert await rows(store, "SELECT message_id FROM queued_triggers ORDER BY id") == [
        ("m2",),
        ("m3",),
    ]
    first = await turns.next_started()
    assert not first.from_queue

    turns.let_finish("m1")
    second = await turns.next_started()
    assert (second.trigger.message_id, second.from_queue) == ("m2", True)
    assert second.trigger.payload == {"note": "second"}
    turns.let_finish("m2")
    turns.let_finish("m3")
    await locks.wait_idle(CHANNEL)
    assert turns.finished == ["m1", "m2", "m3"]
    assert await rows(store, "SELECT * FROM channel_locks") == []
    assert await rows(store, "SELECT * FROM queued_triggers") == []


async def test_channels_do_not_wait_for_each_other(open_locks: OpenLocks) -> None:
    turns = HeldTurns()
    locks = await open_locks(turns)
    assert await locks.submit(trigger("a", channel_id="1")) is Admission.STARTED
    assert await locks.submit(trigger("b", channel_id="2")) is Admission.STARTED


async def test_two_registries_on_one_database_never_both_hold_a_channel(
    open_locks: OpenLocks,
) -> None:
    holding: set[str] = set()
    overlaps: list[str] = []
    served: list[str] = []

    async def serve(turn: Turn) -> None:
        message_id = turn.trigger.message_id or ""
        if holding:
            overlaps.append(message_id)
        holding.add(message_id)
        await asyncio.sleep(0.005)
        holding.discard(message_id)
        served.append(message_id)

    first = await open_locks(serve)
    second = await open_locks(serve)
    submissions = [(first if n % 2 else second).submit(trigger(f"m{n}")) for n in range(20)]
    admissions = await asyncio.gather(*submissions)
    assert admissions.count(Admission.STARTED) >= 1
    async with asyncio.timeout(10):
        while len(served) < 20:
            await first.wait_idle(CHANNEL)
            await second.wait_idle(CHANNEL)
            await asyncio.sleep(0.01)
    assert overlaps == []
    assert sorted(served) == sorted(f"m{n}" for n in range(20))


async def test_kill_clears_the_queue_stops_the_stream_and_ignores_messages_while_unwinding(
    open_locks: OpenLocks,
) -> None:
    locks, turns, kills = await open_recording_kills(open_locks)
    await locks.submit(trigger("m1"))
    await locks.submit(trigger("m2"))
    await locks.submit(trigger("m3"))
    await turns.next_started()

    outcome = await locks.kill(CHANNEL, requester_id="42")
    assert (outcome.stopped, outcome.cleared) == (True, 2)
    assert kills == [KillReason.KILL]
    assert locks.stop_requested(CHANNEL)
    assert await locks.submit(trigger("during-unwind")) is Admission.IGNORED

    turns.let_finish("m1")
    await locks.wait_idle(CHANNEL)
    assert turns.started_ids == ["m1"]
    assert not locks.stop_requested(CHANNEL)
    assert await locks.submit(trigger("after")) is Admission.STARTED
    turns.let_finish("after")
    await locks.wait_idle(CHANNEL)
    assert (await locks.kill(CHANNEL, requester_id="42")).nothing_to_stop


async def test_a_turn_stopped_by_kill_discards_the_queue_when_it_releases(
    open_locks: OpenLocks, store: Store
) -> None:
    """/kill stops the turn at once, but its clearing of the queue may still wait on a busy
    database: the stopped turn's release must not hand the channel to a message /kill drops."""
    locks, turns, kills = await open_recording_kills(open_locks)
    await locks.submit(trigger("m1"))
    await locks.submit(trigger("m2"))
    await turns.next_started()
    locks._request_stop(locks._entries[CHANNEL], "42")  # what kill does before its transaction
    assert kills == [KillReason.KILL]
    turns.let_finish("m1")
    async with asyncio.timeout(5):  # a handed-on m2 would be held, and never end
        await locks.wait_idle(CHANNEL)
    assert turns.started_ids == ["m1"]
    assert await rows(store, "SELECT message_id FROM queued_triggers") == []
    assert await rows(store, "SELECT channel_id FROM channel_locks") == []


async def test_a_kill_in_another_process_stops_the_turn_and_clears_the_queue(
    open_locks: OpenLocks,
) -> None:
    owner, turns, kills = await open_recording_kills(open_locks)
    other = await open_locks(HeldTurns())
    await owner.submit(trigger("m1"))
    await turns.next_started()
    assert await other.submit(trigger("m2")) is Admission.QUEUED
    assert await other.requester_of(CHANNEL) == "7"  # for TOMORI_KILL_POLICY=requester

    outcome = await other.kill(CHANNEL, requester_id="42")
    assert (outcome.stopped, outcome.cleared) == (True, 1)
    assert await other.submit(trigger("during-unwind")) is Admission.IGNORED
    assert await owner.submit(trigger("before-the-owner-reads-it")) is Admission.IGNORED
    async with asyncio.timeout(5):
        while not kills:  # noqa: ASYNC110 - the owner reads stop requests on its own cadence
            await asyncio.sleep(0.01)
    assert kills == [KillReason.KILL]
    assert owner.stop_requested(CHANNEL)
    assert await owner.submit(trigger("during-unwind-here")) is Admission.IGNORED

    turns.let_finish("m1")
    await owner.wait_idle(CHANNEL)
    assert turns.started_ids == ["m1"]  # nothing queued before or during the kill ran
    assert await rows(owner._store, "SELECT * FROM channel_locks") == []
    assert await other.submit(trigger("after")) is Admission.STARTED  # no stop request lingers
    assert not other.stop_requested(CHANNEL)
    await asyncio.sleep(0.4)
    assert kills == [KillReason.KILL]  # asked once, stopped once


async def test_a_kill_for_a_turn_whose_process_is_gone_frees_the_channel(
    open_locks: OpenLocks, store: Store
) -> None:
    locks = await open_locks(HeldTurns())
    await store.execute(
        "INSERT INTO channel_locks (channel_id, owner, turn_id, locked_at, last_progress_at)"
        " VALUES (?, 'gone', 't', 0, 0)",
        (CHANNEL,),
    )
    assert (await locks.kill(CHANNEL, requester_id="42")).nothing_to_stop
    assert await rows(store, "SELECT * FROM channel_locks") == []


async def test_a_stale_lock_is_released_by_the_next_message(open_locks: OpenLocks) -> None:
    locks, turns, kills = await open_recording_kills(
        open_locks, Settings(channel_lock_timeout_ms=50)
    )
    await locks.submit(trigger("m1"))
    await locks.submit(trigger("m2"))
    await turns.next_started()
    await asyncio.sleep(0.12)

    assert await locks.submit(trigger("m3")) is Admission.STARTED
    started = await turns.next_started()
    assert started.trigger.message_id == "m3"
    assert kills == [KillReason.STALE]
    await asyncio.sleep(0)
    assert turns.cancelled == ["m1"]
    turns.let_finish("m3")
    await locks.wait_idle(CHANNEL)
    assert "m2" not in turns.started_ids  # the stale turn's queue was discarded


async def test_a_lock_under_a_watchdog_is_never_stale(open_locks: OpenLocks) -> None:
    locks: ChannelLocks
    phase_over = asyncio.Event()

    async def long_phase(turn: Turn) -> None:
        await locks.run_under_watchdog(turn.channel_id, asyncio.sleep(0.3))
        phase_over.set()

    turns = HeldTurns(long_phase)
    locks = await open_locks(turns, Settings(channel_lock_timeout_ms=100))
    await locks.submit(trigger("m1"))
    await asyncio.sleep(0.2)  # twice the lock timeout, inside the watchdog phase
    assert await locks.submit(trigger("m2")) is Admission.QUEUED
    await phase_over.wait()
    await asyncio.sleep(0.05)  # the stale window restarts when the phase ends
    assert await locks.submit(trigger("m3")) is Admission.QUEUED
    await asyncio.sleep(0.1)
    assert await locks.submit(trigger("m4")) is Admission.STARTED
    assert turns.cancelled == ["m1"]


async def test_a_phase_of_an_ended_turn_cannot_lift_the_next_turns_exemption(
    open_locks: OpenLocks,
) -> None:
    locks: ChannelLocks
    old_phase_may_end = asyncio.Event()
    leftover: list[asyncio.Task[bool]] = []

    async def phases(turn: Turn) -> None:
        if turn.trigger.message_id == "m1":
            # A phase that outlives its turn, as one settling after a /kill does.
            leftover.append(
                asyncio.create_task(
                    locks.run_under_watchdog(turn.channel_id, old_phase_may_end.wait())
                )
            )
            await asyncio.sleep(0)
        else:
            await locks.run_under_watchdog(turn.channel_id, asyncio.sleep(0.4))

    turns = HeldTurns(phases)
    locks = await open_locks(turns, Settings(channel_lock_timeout_ms=100))
    await locks.submit(trigger("m1"))
    await locks.submit(trigger("m2"))
    turns.let_finish("m1")
    await turns.next_started()
    await turns.next_started()
    old_phase_may_end.set()
    await asyncio.gather(*leftover)
    await asyncio.sleep(0.2)  # past the lock timeout, still inside m2's own phase
    assert await locks.submit(trigger("m3")) is Admission.QUEUED


async def test_touches_reach_the_database_at_most_once_a_second(
    open_locks: OpenLocks, db_path: Path
) -> None:
    locks: ChannelLocks
    updates: list[str] = []
    progress_seen: list[float] = []
    measured = asyncio.Event()

    async def touch_a_lot(turn: Turn) -> None:
        deadline = time.monotonic() + 1.5
        touches = 0
        while time.monotonic() < deadline:
            locks.touch_channel_lock(turn.channel_id)
            touches += 1
            await asyncio.sleep(0.001)
        assert touches > 500
        reader = await Store.open(db_path)
        try:
            row = (await reader.fetchall("SELECT locked_at, last_progress_at FROM channel_locks"))[
                0
            ]
            progress_seen.append(row["last_progress_at"] - row["locked_at"])
            measured.set()
        finally:
            await reader.close()

    turns = HeldTurns(touch_a_lot)
    locks = await open_locks(turns)
    await locks._store.connection.set_trace_callback(
        lambda sql: updates.append(sql) if sql.startswith("UPDATE channel_locks") else None
    )
    await locks.submit(trigger("m1"))
    await turns.next_started()
    await asyncio.wait_for(measured.wait(), 5)
    turns.let_finish("m1")
    await locks.wait_idle(CHANNEL)
    assert 1 <= len(updates) <= 2
    assert progress_seen[0] >= 0.9  # the lock row really moved forward


async def test_many_streaming_channels_cost_one_progress_transaction_a_second(
    open_locks: OpenLocks,
) -> None:
    channels = [str(200 + n) for n in range(100)]
    locks: ChannelLocks
    trace: list[str] = []

    async def touch_for_a_while(turn: Turn) -> None:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            locks.touch_channel_lock(turn.channel_id)
            await asyncio.sleep(0.005)

    turns = HeldTurns(touch_for_a_while)
    locks = await open_locks(turns)
    for channel in channels:
        await locks.submit(trigger(f"m{channel}", channel))
    await locks._store.connection.set_trace_callback(trace.append)
    for _ in channels:
        await turns.next_started()
    await asyncio.sleep(2.3)  # the touching ends after 1.5 s; the batch after it is written by 2

    transactions: list[list[str]] = []
    outside: list[str] = []
    current: list[str] | None = None
    for statement in trace:
        if statement.startswith("BEGIN"):
            current = []
            transactions.append(current)
        elif statement in ("COMMIT", "ROLLBACK"):
            current = None
        else:
            (outside if current is None else current).append(statement)
    batches = [
        [s for s in t if s.startswith("UPDATE channel_locks")]
        for t in transactions
        if any(s.startswith("UPDATE channel_locks") for s in t)
    ]
    assert not [s for s in outside if s.startswith("UPDATE")]  # none in a transaction of its own
    assert 2 <= len(batches) <= 3  # one batch a second for all 100 channels, not one each
    assert all(len(batch) <= len(channels) for batch in batches)  # a channel once per batch
    moved = await rows(locks._store, "SELECT locked_at, last_progress_at FROM channel_locks")
    assert len(moved) == len(channels)
    assert all(float(p) - float(at) >= 1.2 for at, p in moved)  # type: ignore[arg-type]
    for channel in channels:
        turns.let_finish(f"m{channel}")


async def test_a_stale_lock_of_another_registry_is_superseded_and_its_turn_stopped(
    open_locks: OpenLocks,
) -> None:
    slow: ChannelLocks

    async def quiet_then_touching(turn: Turn) -> None:
        await asyncio.sleep(0.15)
        while True:
            slow.touch_channel_lock(turn.channel_id)
            await asyncio.sleep(0.01)

    slow_turns = HeldTurns(quiet_then_touching)
    slow = await open_locks(slow_turns, Settings(channel_lock_timeout_ms=50))
    fresh_turns = HeldTurns()
    fresh = await open_locks(fresh_turns, Settings(channel_lock_timeout_ms=50))
    await slow.submit(trigger("m1"))
    await slow_turns.next_started()
    await asyncio.sleep(0.1)
    assert await fresh.submit(trigger("m2")) is Admission.STARTED
    async with asyncio.timeout(3):
        await slow.wait_idle(CHANNEL)
    assert slow_turns.cancelled == ["m1"]
    assert fresh.is_busy(CHANNEL)


async def test_start_up_recovers_locks_of_gone_owners_and_drops_triggers_too_old(
    open_locks: OpenLocks, store: Store
) -> None:
    now = time.time()
    await store.execute(
        "INSERT INTO channel_locks (channel_id, owner, turn_id, locked_at, last_progress_at,"
        " watchdogs) VALUES (?, 'gone', 't', ?, ?, 3)",
        (CHANNEL, now, now),
    )
    for message_id, age in [("old", 3600.0), ("fresh1", 1.0), ("fresh2", 0.5)]:
        await store.execute(
            "INSERT INTO queued_triggers (channel_id, message_id, payload, received_at)"
            " VALUES (?, ?, '{}', ?)",
            (CHANNEL, message_id, now - age),
        )
    turns = HeldTurns()
    await open_locks(turns)
    first = await turns.next_started()
    assert (first.trigger.message_id, first.from_queue) == ("fresh1", True)
    turns.let_finish("fresh1")
    assert (await turns.next_started()).trigger.message_id == "fresh2"
    assert "old" not in turns.started_ids


CRASHING_BOT = textwrap.dedent(
    """
    import asyncio, sys
    from tomori.config import Settings
    from tomori.locks import ChannelLocks, Trigger
    from tomori.store import Store

    async def main() -> None:
        store = await Store.open(sys.argv[1])
        await store.migrate()
        locks = ChannelLocks(store, Settings(), lambda turn: asyncio.Event().wait())
        await locks.start()
        for message_id in ("m1", "m2", "m3"):
            print(await locks.submit(Trigger("100", message_id, payload={"n": message_id})))
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)


async def test_a_lock_left_by_a_killed_process_is_recovered_at_start_up(
    open_locks: OpenLocks, db_path: Path
) -> None:
    bot = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRASHING_BOT,
        str(db_path),
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": REPO_ROOT},
    )
    try:
        assert bot.stdout is not None
        lines = [await asyncio.wait_for(bot.stdout.readline(), 30) for _ in range(4)]
        assert [line.decode().strip() for line in lines] == ["started", "queued", "queued", "ready"]
    finally:
        bot.send_signal(signal.SIGKILL)
        await bot.wait()

    turns = HeldTurns()
    await open_locks(turns)
    replayed = await turns.next_started()
    assert (replayed.trigger.message_id, replayed.from_queue) == ("m2", True)
    assert json.loads(json.dumps(replayed.trigger.payload)) == {"n": "m2"}
    turns.let_finish("m2")
    assert (await turns.next_started()).trigger.message_id == "m3"
    assert "m1" not in turns.started_ids
