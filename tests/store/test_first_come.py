"""The store's lock serves the earliest message's work first (tomori/store/first_come.py)."""

from __future__ import annotations

import asyncio

import pytest

from tomori.store.first_come import FirstComeLock, arrived


async def _queue_up(lock: FirstComeLock, served: list[str], name: str, at: float | None) -> None:
    if at is not None:
        arrived(at)
    async with lock:
        served.append(name)
        await asyncio.sleep(0)


async def test_waiters_are_served_by_their_messages_arrival_and_in_turn_within_one() -> None:
    lock = FirstComeLock()
    served: list[str] = []
    await lock.acquire()
    tasks = [
        asyncio.create_task(_queue_up(lock, served, name, at))
        for name, at in [("late", 3.0), ("early", 1.0), ("early again", 1.0), ("middle", 2.0)]
    ]
    await asyncio.sleep(0)
    assert lock.waiting == 4
    lock.release()
    await asyncio.gather(*tasks)
    assert served == ["early", "early again", "middle", "late"]
    assert not lock.locked()


async def test_work_no_message_started_goes_before_every_messages() -> None:
    lock = FirstComeLock()
    served: list[str] = []
    await lock.acquire()
    message = asyncio.create_task(_queue_up(lock, served, "a message's", 1.0))
    await asyncio.sleep(0)
    heartbeat = asyncio.create_task(_queue_up(lock, served, "a heartbeat", None))
    await asyncio.sleep(0)
    lock.release()
    await asyncio.gather(message, heartbeat)
    assert served == ["a heartbeat", "a message's"]


async def test_a_waiter_cancelled_as_it_is_handed_the_lock_passes_it_on() -> None:
    lock = FirstComeLock()
    served: list[str] = []
    await lock.acquire()
    cancelled = asyncio.create_task(_queue_up(lock, served, "cancelled", 1.0))
    after = asyncio.create_task(_queue_up(lock, served, "after", 2.0))
    await asyncio.sleep(0)
    lock.release()  # handed to `cancelled`, which has not run since
    cancelled.cancel()
    await after
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert served == ["after"]
    assert not lock.locked()


async def test_a_waiter_cancelled_while_waiting_is_skipped() -> None:
    lock = FirstComeLock()
    served: list[str] = []
    await lock.acquire()
    cancelled = asyncio.create_task(_queue_up(lock, served, "cancelled", 1.0))
    after = asyncio.create_task(_queue_up(lock, served, "after", 2.0))
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    assert lock.waiting == 1
    lock.release()
    await after
    assert served == ["after"]
    assert not lock.locked()


async def test_after_waiting_is_served_after_everyone_waiting_when_it_asked() -> None:
    lock = FirstComeLock()
    served: list[str] = []
    await lock.acquire()
    waiting = [
        asyncio.create_task(_queue_up(lock, served, name, at))
        for name, at in [("late", 5.0), ("heartbeat", None)]
    ]
    await asyncio.sleep(0)

    async def pending_done() -> None:
        await lock.acquire(after_waiting=True)  # from work no message started
        served.append("all pending done")
        lock.release()

    check = asyncio.create_task(pending_done())
    await asyncio.sleep(0)
    lock.release()
    await asyncio.gather(*waiting, check)
    assert served == ["heartbeat", "late", "all pending done"]
