"""A process that stops cleanly hands what it leaves to the others at once, on both engines.

A closing process frees its channels, leaving their queues (and a turn it cut before it
answered, back at its queue's head) for the processes still running. They used to find them at
their next heartbeat, up to a third of `CHANNEL_LOCK_TIMEOUT_MS` later; the stopping process
now records its departure (announced by NOTIFY on PostgreSQL, read every 250 ms on SQLite),
and they serve them at once.
"""

from __future__ import annotations

import time

from tests.support.databases import DatabaseUnderTest
from tests.support.turns import HeldTurns
from tomori.config.settings import seconds
from tomori.locks import Admission, ChannelLocks, Trigger, lock_backend
from tomori.locks.rules import heartbeat_interval_s

CHANNEL = "100"
LONG_LOCK_TIMEOUT_MS = 60_000
"""A heartbeat every 20 s: far later than the test waits, so it cannot be what serves."""


def trigger(message_id: str) -> Trigger:
    return Trigger(CHANNEL, message_id, requester_id="7", payload={})


async def test_a_clean_stop_hands_its_queue_to_the_other_process_at_once(
    database: DatabaseUnderTest,
) -> None:
    settings = database.settings(channel_lock_timeout_ms=LONG_LOCK_TIMEOUT_MS)
    assert heartbeat_interval_s(seconds(settings.channel_lock_timeout_ms)) == 20
    old_turns, new_turns = HeldTurns(), HeldTurns()
    registries: list[ChannelLocks] = []
    try:
        for turns in (old_turns, new_turns):
            locks = ChannelLocks(lock_backend(await database.open(), settings), settings, turns)
            await locks.start()
            registries.append(locks)
        old, new = registries
        assert await old.submit(trigger("m1")) is Admission.STARTED
        await old_turns.next_started()
        assert await new.submit(trigger("m2")) is Admission.QUEUED

        stopped_at = time.monotonic()
        await old.close()  # m1 is cut before it answered: back to the head of the queue
        replayed = await new_turns.next_started(within=5)
        assert time.monotonic() - stopped_at < 1.5
        assert (replayed.trigger.message_id, replayed.from_queue) == ("m1", True)
        new_turns.let_finish("m1")
        assert (await new_turns.next_started()).trigger.message_id == "m2"
        new_turns.let_finish("m2")
        await new.wait_idle(CHANNEL)
        assert await database.rows("SELECT channel_id FROM channel_locks") == []
    finally:
        for locks in registries:
            await locks.close()
