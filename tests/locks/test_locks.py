from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.databases import DatabaseUnderTest, RecordingDatabase
from tests.support.paths import REPO
from tests.support.registries import OpenRegistry, registries
from tests.support.turns import HeldTurns
from tests.support.write_lock import write_lock_held
from tomori.locks import Admission, ChannelLocks, Trigger, Turn, TurnGuard, registry
from tomori.locks.vocabulary import KillReason

OpenLocks = OpenRegistry
CHANNEL = "100"


def trigger(message_id: str, channel_id: str = CHANNEL, **payload: object) -> Trigger:
    return Trigger(channel_id, message_id, requester_id="7", payload=payload)


@pytest.fixture
async def open_locks(database: DatabaseUnderTest) -> AsyncIterator[OpenLocks]:
    """Opens registries on the test's database, as separate processes would."""
    async with registries(database) as factory:
        yield factory


async def open_recording_kills(
    open_locks: OpenLocks, **settings: object
) -> tuple[ChannelLocks, HeldTurns, list[KillReason]]:
    """A registry whose turns register a kill callback that records each kill's reason."""
    kills: list[KillReason] = []

    async def register_kill(turn: Turn, guard: TurnGuard) -> None:
        guard.set_kill(kills.append)

    turns = HeldTurns(register_kill)
    registry = await open_locks(turns, **settings)
    return registry, turns, kills


async def test_a_busy_channel_queues_triggers_and_serves_them_in_order(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    turns = HeldTurns()
    locks = await open_locks(turns)
    assert await locks.submit(trigger("m1")) is Admission.STARTED
    assert await locks.submit(trigger("m2", note="second")) is Admission.QUEUED
    assert await locks.submit(trigger("m3")) is Admission.QUEUED
    assert await database.rows("SELECT message_id FROM queued_triggers ORDER BY id") == [
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
    assert await database.rows("SELECT * FROM channel_locks") == []
    assert await database.rows("SELECT * FROM queued_triggers") == []


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

    async def serve(turn: Turn, guard: TurnGuard) -> None:
        message_id = turn.trigger.message_id or ""
        if holding:
            overlaps.append(message_id)
        holding.add(message_id)
        await asyncio.sleep(0.005)
        holding.discard(message_id)
        served.append(message_id)

    first = await open_locks(serve, queue_per_member=20)  # one requester sends all twenty
    second = await open_locks(serve, queue_per_member=20)
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


async def test_a_message_delivered_to_two_processes_is_answered_once(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    """During a rolling restart the old and the new process both receive each message."""
    old_turns, new_turns = HeldTurns(), HeldTurns()
    old, new = await open_locks(old_turns), await open_locks(new_turns)
    assert await old.submit(trigger("m1")) is Admission.STARTED
    assert await new.submit(trigger("m1")) is Admission.IGNORED  # it runs in the old one
    assert await new.submit(trigger("m2")) is Admission.QUEUED
    assert await old.submit(trigger("m2")) is Admission.QUEUED  # queued once, not twice
    assert await database.rows("SELECT message_id FROM queued_triggers") == [("m2",)]
    old_turns.let_finish("m1")
    old_turns.let_finish("m2")
    new_turns.let_finish("m2")
    await old.wait_idle(CHANNEL)
    assert await new.submit(trigger("m1")) is Admission.IGNORED  # answered already
    assert old_turns.started_ids + new_turns.started_ids == ["m1", "m2"]


async def answering(turn: Turn, guard: TurnGuard) -> None:
    guard.mark_answered()  # its first words are in the channel


async def test_a_process_that_closes_leaves_its_queue_to_the_process_still_running(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    """The end of a rolling restart: the old process stops while the new one serves. Its queue
    is served without waiting for another message in the channel; the turn it cut had already
    answered, so it is not run again."""
    old_turns, new_turns = HeldTurns(answering), HeldTurns()
    old = await open_locks(old_turns)
    new = await open_locks(new_turns, channel_lock_timeout_ms=1500)  # it beats every second
    assert await old.submit(trigger("m1")) is Admission.STARTED
    await old_turns.next_started()
    assert await old.submit(trigger("m2")) is Admission.QUEUED
    assert await new.submit(trigger("m3")) is Admission.QUEUED
    await old.close()

    served = await new_turns.next_started()
    assert (served.trigger.message_id, served.from_queue) == ("m2", True)
    new_turns.let_finish("m2")
    new_turns.let_finish("m3")
    assert (await new_turns.next_started()).trigger.message_id == "m3"
    await new.wait_idle(CHANNEL)
    assert new_turns.started_ids == ["m2", "m3"]
    assert await database.rows("SELECT * FROM channel_locks") == []


async def test_a_turn_cut_by_closing_before_it_answered_is_answered_first_by_another_process(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    """Cut before it showed anything, the turn's message would otherwise go unanswered: it
    goes back to the head of its queue, ahead of the messages that waited behind it."""
    old_turns, new_turns = HeldTurns(), HeldTurns()
    old = await open_locks(old_turns)
    new = await open_locks(new_turns, channel_lock_timeout_ms=1500)
    assert await old.submit(trigger("m1", note="first")) is Admission.STARTED
    await old_turns.next_started()
    assert await old.submit(trigger("m2")) is Admission.QUEUED
    await old.close()  # the new process may take the queue up at once: its heartbeat serves it
    assert old_turns.cancelled == ["m1"]

    replayed = await new_turns.next_started()
    assert (replayed.trigger.message_id, replayed.from_queue) == ("m1", True)
    assert replayed.trigger.payload == {"note": "first"}
    new_turns.let_finish("m1")
    new_turns.let_finish("m2")
    assert (await new_turns.next_started()).trigger.message_id == "m2"
    await new.wait_idle(CHANNEL)
    assert await new.submit(trigger("m1")) is Admission.IGNORED  # answered once, here
    assert new_turns.started_ids == ["m1", "m2"]


async def test_an_admission_retried_after_its_commit_landed_starts_its_turn_once(
    open_locks: OpenLocks,
) -> None:
    """The connection dropped as the admission committed: the registry saw an error, not the
    turn it started. Its retry finds the turn and begins it; nothing is admitted twice."""
    turns = HeldTurns()
    locks = await open_locks(turns)
    first = trigger("m1")
    committed = await locks._backend.admit(first, None)  # the attempt whose reply was lost
    assert committed.turn is not None
    assert await locks.submit(first) is Admission.STARTED
    started = await turns.next_started()
    assert started.turn_id == committed.turn.turn_id
    assert await locks.submit(first) is Admission.IGNORED  # a third delivery: it runs
    turns.let_finish("m1")
    await locks.wait_idle(CHANNEL)
    assert turns.started_ids == ["m1"]


async def test_kill_clears_the_queue_stops_the_stream_and_takes_a_message_once_it_unwound(
    open_locks: OpenLocks,
) -> None:
    """A message sent while the stopped turn unwinds waits for it (milliseconds, in a turn that
    drops what is not on the wire) and is then answered: it is neither lost nor queued behind
    a queue the kill discards."""
    locks, turns, kills = await open_recording_kills(open_locks)
    await locks.submit(trigger("m1"))
    await locks.submit(trigger("m2"))
    await locks.submit(trigger("m3"))
    await turns.next_started()

    outcome = await locks.kill(CHANNEL, requester_id="42")
    assert (outcome.stopped, outcome.cleared) == (True, 2)
    assert kills == [KillReason.KILL]
    during = asyncio.create_task(locks.submit(trigger("during-unwind")))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not during.done()  # it waits for the stopped turn to hand the channel on

    turns.let_finish("m1")
    assert await during is Admission.STARTED
    turns.let_finish("during-unwind")
    await locks.wait_idle(CHANNEL)
    assert turns.started_ids == ["m1", "during-unwind"]  # never m2 or m3, which /kill cleared
    assert (await locks.kill(CHANNEL, requester_id="42")).nothing_to_stop


async def test_a_message_is_ignored_when_the_stopped_turn_does_not_unwind_in_time(
    open_locks: OpenLocks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn deaf to its kill (a tool that ignores its cancellation) does not hold the
    channel's messages for ever: past `UNWIND_WAIT_S` they are ignored, as before."""
    monkeypatch.setattr(registry, "UNWIND_WAIT_S", 0.05)
    locks, turns, _ = await open_recording_kills(open_locks)
    await locks.submit(trigger("m1"))
    await turns.next_started()
    await locks.kill(CHANNEL, requester_id="42")
    assert await locks.submit(trigger("during-unwind")) is Admission.IGNORED
    turns.let_finish("m1")
    await locks.wait_idle(CHANNEL)
    assert turns.started_ids == ["m1"]


async def test_a_turn_stopped_by_kill_discards_the_queue_when_it_releases(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    """/kill stops the turn at once, but its clearing of the queue may still wait on a busy
    database: the stopped turn's release must not hand the channel to a message /kill drops."""
    locks, turns, kills = await open_recording_kills(open_locks)
    await locks.submit(trigger("m1"))
    await locks.submit(trigger("m2"))
    await turns.next_started()
    lease = locks._turns.lease(CHANNEL)
    assert lease is not None
    lease.request_stop()  # what kill does before its transaction
    assert kills == [KillReason.KILL]
    turns.let_finish("m1")
    async with asyncio.timeout(5):  # a handed-on m2 would be held, and never end
        await locks.wait_idle(CHANNEL)
    assert turns.started_ids == ["m1"]
    assert await database.rows("SELECT message_id FROM queued_triggers") == []
    assert await database.rows("SELECT channel_id FROM channel_locks") == []


async def test_a_kill_in_another_process_stops_the_turn_and_clears_the_queue(
    open_locks: OpenLocks, database: DatabaseUnderTest
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
    here = asyncio.create_task(owner.submit(trigger("during-unwind-here")))  # waits for it

    turns.let_finish("m1")
    assert await here is Admission.STARTED
    turns.let_finish("during-unwind-here")
    await owner.wait_idle(CHANNEL)
    # nothing queued before the kill ran, nor what another process saw while it unwound
    assert turns.started_ids == ["m1", "during-unwind-here"]
    assert await database.rows("SELECT * FROM channel_locks") == []
    assert await other.submit(trigger("after")) is Admission.STARTED  # no stop request lingers
    await asyncio.sleep(0.4)
    assert kills == [KillReason.KILL]  # asked once, stopped once


async def test_a_kill_for_a_turn_whose_process_is_gone_frees_the_channel(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    locks = await open_locks(HeldTurns())
    await database.execute(
        "INSERT INTO channel_locks (channel_id, owner, turn_id, locked_at, last_progress_at)"
        " VALUES (?, 'gone', 't', 0, 0)",
        (CHANNEL,),
    )
    assert (await locks.kill(CHANNEL, requester_id="42")).nothing_to_stop
    assert await database.rows("SELECT * FROM channel_locks") == []


async def test_a_stale_lock_is_released_by_the_next_message(open_locks: OpenLocks) -> None:
    locks, turns, kills = await open_recording_kills(open_locks, channel_lock_timeout_ms=50)
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
    phase_over = asyncio.Event()

    async def long_phase(turn: Turn, guard: TurnGuard) -> None:
        await guard.run_under_watchdog(asyncio.sleep(0.3))
        phase_over.set()

    turns = HeldTurns(long_phase)
    locks = await open_locks(turns, channel_lock_timeout_ms=100)
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
    old_phase_may_end = asyncio.Event()
    leftover: list[asyncio.Task[bool]] = []

    async def phases(turn: Turn, guard: TurnGuard) -> None:
        if turn.trigger.message_id == "m1":
            # A phase that outlives its turn, as one settling after a /kill does.
            leftover.append(asyncio.create_task(guard.run_under_watchdog(old_phase_may_end.wait())))
            await asyncio.sleep(0)
        else:
            await guard.run_under_watchdog(asyncio.sleep(0.4))

    turns = HeldTurns(phases)
    locks = await open_locks(turns, channel_lock_timeout_ms=100)
    await locks.submit(trigger("m1"))
    await locks.submit(trigger("m2"))
    turns.let_finish("m1")
    await turns.next_started()
    await turns.next_started()
    old_phase_may_end.set()
    await asyncio.gather(*leftover)
    await asyncio.sleep(0.2)  # past the lock timeout, still inside m2's own phase
    assert await locks.submit(trigger("m3")) is Admission.QUEUED


def progress_writes(recorded: RecordingDatabase) -> list[list[str]]:
    """The progress statements of each transaction that wrote any."""
    writes = [
        [sql for sql in statements if sql.startswith("UPDATE channel_locks SET last_progress_at")]
        for statements in recorded.transactions
    ]
    return [batch for batch in writes if batch]


@pytest.mark.slow  # counts writes over seconds
async def test_touches_reach_the_database_at_most_once_a_second(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    progress_seen: list[float] = []
    measured = asyncio.Event()

    async def touch_a_lot(turn: Turn, guard: TurnGuard) -> None:
        deadline = time.monotonic() + 1.5
        touches = 0
        while time.monotonic() < deadline:
            guard.touch()
            touches += 1
            await asyncio.sleep(0.001)
        assert touches > 500
        rows = await database.rows("SELECT locked_at, last_progress_at FROM channel_locks")
        progress_seen.append(float(rows[0][1]) - float(rows[0][0]))
        measured.set()

    turns = HeldTurns(touch_a_lot)
    recorded: list[RecordingDatabase] = []
    locks = await open_locks(turns, recorded)
    await locks.submit(trigger("m1"))
    await turns.next_started()
    await asyncio.wait_for(measured.wait(), 5)
    turns.let_finish("m1")
    await locks.wait_idle(CHANNEL)
    assert 1 <= len(progress_writes(recorded[0])) <= 2
    assert progress_seen[0] >= 0.9  # the lock row really moved forward


@pytest.mark.slow  # streams for seconds
async def test_many_streaming_channels_cost_one_progress_statement_a_second(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    channels = [str(200 + n) for n in range(100)]

    async def touch_for_a_while(turn: Turn, guard: TurnGuard) -> None:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            guard.touch()
            await asyncio.sleep(0.005)

    turns = HeldTurns(touch_for_a_while)
    recorded: list[RecordingDatabase] = []
    locks = await open_locks(turns, recorded)
    for channel in channels:
        await locks.submit(trigger(f"m{channel}", channel))
    for _ in channels:
        await turns.next_started()
    recorded[0].transactions.clear()
    await asyncio.sleep(2.3)  # the touching ends after 1.5 s; the batch after it is written by 2

    assert not [s for s in recorded[0].statements if s.startswith("UPDATE")]  # none on its own
    batches = progress_writes(recorded[0])
    assert 2 <= len(batches) <= 3  # one batch a second for all 100 channels, not one each
    assert all(len(batch) == 1 for batch in batches)  # one statement for all of them
    moved = await database.rows("SELECT locked_at, last_progress_at FROM channel_locks")
    assert len(moved) == len(channels)
    assert all(float(p) - float(at) >= 1.2 for at, p in moved)
    for channel in channels:
        turns.let_finish(f"m{channel}")


async def test_a_stale_lock_of_another_registry_is_superseded_and_its_turn_stopped(
    open_locks: OpenLocks,
) -> None:

    async def quiet_then_touching(turn: Turn, guard: TurnGuard) -> None:
        await asyncio.sleep(0.15)
        while True:
            guard.touch()
            await asyncio.sleep(0.01)

    slow_turns = HeldTurns(quiet_then_touching)
    slow = await open_locks(slow_turns, channel_lock_timeout_ms=50)
    fresh_turns = HeldTurns()
    fresh = await open_locks(fresh_turns, channel_lock_timeout_ms=50)
    await slow.submit(trigger("m1"))
    await slow_turns.next_started()
    await asyncio.sleep(0.1)
    assert await fresh.submit(trigger("m2")) is Admission.STARTED
    async with asyncio.timeout(3):
        await slow.wait_idle(CHANNEL)
    assert slow_turns.cancelled == ["m1"]
    assert (await fresh_turns.next_started()).trigger.message_id == "m2"
    assert fresh_turns.cancelled == []  # the fresh registry runs m2: it superseded, and holds


async def test_start_up_recovers_locks_of_gone_owners_and_drops_triggers_too_old(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    now = time.time()
    await database.execute(
        "INSERT INTO channel_locks (channel_id, owner, turn_id, locked_at, last_progress_at,"
        " watchdogs) VALUES (?, 'gone', 't', ?, ?, 3)",
        (CHANNEL, now, now),
    )
    for message_id, age in [("old", 3600.0), ("fresh1", 1.0), ("fresh2", 0.5)]:
        await database.execute(
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
    from tomori.config.settings import Settings
    from tomori.locks import ChannelLocks, Trigger
    from tomori.locks import lock_backend
    from tomori.store.connect import open_database

    async def main() -> None:
        settings = Settings.from_env()
        database = await open_database(settings)
        answering = asyncio.Event()

        async def turn(turn, guard) -> None:
            if sys.argv[1] == "answered":
                guard.mark_answered()  # its first words are in the channel
            answering.set()
            await asyncio.Event().wait()

        locks = ChannelLocks(lock_backend(database, settings), settings, turn)
        await locks.start()
        for message_id in ("m1", "m2", "m3"):
            print(await locks.submit(Trigger("100", message_id, payload={"n": message_id})))
        await answering.wait()
        while await database.fetchall("SELECT 1 FROM channel_locks WHERE answered = 0"):
            if sys.argv[1] != "answered":
                break
            await asyncio.sleep(0.05)  # written with its progress
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("shown", ["nothing", "answered"])
async def test_a_lock_left_by_a_killed_process_is_recovered_at_start_up(
    open_locks: OpenLocks, database: DatabaseUnderTest, shown: str
) -> None:
    """Its queue is replayed in order, and so is its own turn if it showed nothing yet: a
    message is never lost to a crash, nor answered twice."""
    bot = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRASHING_BOT,
        shown,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, **database.environment, "PYTHONPATH": str(REPO)},
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
    expected = ["m2", "m3"] if shown == "answered" else ["m1", "m2", "m3"]
    for message_id in expected:
        replayed = await turns.next_started()
        assert (replayed.trigger.message_id, replayed.from_queue) == (message_id, True)
        assert json.loads(json.dumps(replayed.trigger.payload)) == {"n": message_id}
        turns.let_finish(message_id)
    await asyncio.sleep(0.2)
    assert turns.started_ids == expected


@pytest.mark.slow  # waits out a heartbeat
async def test_a_dead_processs_channel_is_served_without_waiting_for_a_new_message(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    """The owner crashed mid-answer; the process still running serves its queue by itself."""
    turns = HeldTurns()
    await open_locks(turns, channel_lock_timeout_ms=1500)  # a heartbeat a second
    now = time.time()
    await database.execute(
        "INSERT INTO channel_locks (channel_id, owner, turn_id, locked_at, last_progress_at,"
        " watchdogs) VALUES (?, 'crashed', 't', ?, ?, 1)",
        (CHANNEL, now, now),
    )
    await database.execute(
        "INSERT INTO queued_triggers (channel_id, message_id, payload, received_at)"
        " VALUES (?, 'waiting', '{}', ?)",
        (CHANNEL, now),
    )
    served = await turns.next_started(within=10)
    assert (served.trigger.message_id, served.from_queue) == ("waiting", True)
    turns.let_finish("waiting")


async def test_a_message_still_waiting_for_the_database_when_kill_comes_is_dropped(
    open_locks: OpenLocks, database: DatabaseUnderTest
) -> None:
    """/kill clears the queue; a message that came before it but could not reach the queue
    yet (the database busy or away) is dropped with it, not answered after."""
    if database.engine != "sqlite":
        pytest.skip("the database is held busy through SQLite's write lock")
    turns = HeldTurns()
    locks = await open_locks(turns, db_busy_timeout_ms=50)
    assert await locks.submit(trigger("m1")) is Admission.STARTED
    await turns.next_started()
    async with write_lock_held(Path(database.environment["TOMORI_DB_PATH"])):
        retried = asyncio.create_task(locks.submit(trigger("m2")))
        await asyncio.sleep(0.2)  # m2 is being retried; m3 waits its turn behind it
        waiting = asyncio.create_task(locks.submit(trigger("m3")))
        await asyncio.sleep(0.05)
        killing = asyncio.create_task(locks.kill(CHANNEL, requester_id="42"))
        await asyncio.sleep(0.1)
        turns.let_finish("m1")  # its turn ends; its release waits for the database too
        await asyncio.sleep(0.1)
    assert await waiting is Admission.IGNORED
    await retried  # queued and cleared, or dropped: either way never answered
    await killing
    await locks.wait_idle(CHANNEL)
    assert turns.started_ids == ["m1"]
