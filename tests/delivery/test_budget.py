"""The token's request budget: a pace for the whole bot, the most urgent first, and each channel
within its own bucket without waiting for another's."""

from __future__ import annotations

import asyncio
import time

from tomori.delivery.budget import BACKLOG_QUIET_S, ChannelPace, RequestBudget
from tomori.delivery.port import Urgency


async def test_requests_beyond_the_burst_leave_at_the_pace() -> None:
    budget = RequestBudget(rate_per_s=100, burst=5)
    started = time.monotonic()
    for _ in range(5 + 30):
        await budget.take(Urgency.MORE)
    took = time.monotonic() - started
    assert 0.27 <= took < 0.6  # the burst at once, then 30 at 100 a second
    assert budget.granted == 35


async def test_the_most_urgent_waiting_request_leaves_first() -> None:
    budget = RequestBudget(rate_per_s=50, burst=1)
    await budget.take(Urgency.MORE)  # the burst is spent: the next ones wait
    left: list[str] = []

    async def request(name: str, urgency: Urgency) -> None:
        await budget.take(urgency)
        left.append(name)

    async with asyncio.TaskGroup() as group:
        for name, urgency in [
            ("history", Urgency.READ),
            ("typing", Urgency.TYPING),
            ("edit", Urgency.MORE),
            ("last", Urgency.LAST),
            ("first", Urgency.FIRST),
        ]:
            group.create_task(request(name, urgency))
            await asyncio.sleep(0)
    assert left == ["history", "first", "last", "edit", "typing"]


async def test_after_a_backlog_intermediate_requests_wait_while_the_last_texts_go() -> None:
    """Twenty first texts at once make a backlog (the last waits 0.19 s): an edit asked for
    after it waits `BACKLOG_QUIET_S`, while an answer's last text asked for with it goes."""
    budget = RequestBudget(rate_per_s=100, burst=1)
    async with asyncio.TaskGroup() as group:
        for _ in range(20):
            group.create_task(budget.take(Urgency.FIRST))
    started = time.monotonic()
    edit = asyncio.create_task(budget.take(Urgency.MORE))
    await budget.take(Urgency.LAST)
    assert time.monotonic() - started < 0.1
    await edit
    assert time.monotonic() - started >= BACKLOG_QUIET_S - 0.05
    budget.close()


async def test_marks_waiting_out_a_backlog_then_go_at_the_pace() -> None:
    """Progress marks wait out a backlog like intermediate requests, then leave at the pace:
    a mark granted after a long wait is no new backlog (else each held the next back another
    `BACKLOG_QUIET_S`: 20 marks would take 10 s)."""
    budget = RequestBudget(rate_per_s=100, burst=1)
    async with asyncio.TaskGroup() as group:
        for _ in range(20):
            group.create_task(budget.take(Urgency.FIRST))
    started = time.monotonic()
    async with asyncio.timeout(BACKLOG_QUIET_S + 1.0), asyncio.TaskGroup() as group:
        for _ in range(20):
            group.create_task(budget.take(Urgency.REACTION))
    assert time.monotonic() - started >= BACKLOG_QUIET_S - 0.05
    budget.close()


async def test_without_a_backlog_an_intermediate_request_goes_at_once() -> None:
    budget = RequestBudget(rate_per_s=100, burst=1)
    for _ in range(5):  # a request every 20 ms: each waits at most one slot, 10 ms
        await budget.take(Urgency.FIRST)
        await asyncio.sleep(0.02)
    started = time.monotonic()
    await budget.take(Urgency.MORE)
    assert time.monotonic() - started < 0.05
    budget.close()


async def test_a_process_takes_its_share_of_the_token() -> None:
    budget = RequestBudget(rate_per_s=200, burst=4)
    budget.share_with(2)
    assert (budget.rate_per_s, budget.burst) == (100, 2)
    started = time.monotonic()
    for _ in range(2 + 20):
        await budget.take(Urgency.MORE)
    assert 0.18 <= time.monotonic() - started < 0.45  # 20 at 100 a second, not 200


async def test_a_cancelled_wait_gives_its_place_to_the_next() -> None:
    budget = RequestBudget(rate_per_s=20, burst=1)
    await budget.take(Urgency.MORE)
    cancelled = asyncio.create_task(budget.take(Urgency.FIRST))
    await asyncio.sleep(0)
    cancelled.cancel()
    started = time.monotonic()
    async with asyncio.timeout(1):
        await budget.take(Urgency.READ)
    assert time.monotonic() - started < 0.09  # the next slot, 50 ms on, not one after it
    assert budget.granted == 2
    budget.close()


async def test_a_channel_waits_for_its_own_bucket_and_never_for_anothers() -> None:
    pace = ChannelPace(limit=3, window_s=0.3)
    for _ in range(3):
        async with pace.slot("busy"):
            pass
    started = time.monotonic()
    async with pace.slot("quiet"):
        pass
    assert time.monotonic() - started < 0.02  # another channel's full bucket is not waited on
    async with pace.slot("busy"):
        pass
    assert 0.25 <= time.monotonic() - started < 0.5  # its own bucket is


async def test_a_request_counts_from_the_end_of_its_block_and_one_unsent_not_at_all() -> None:
    pace = ChannelPace(limit=1, window_s=0.2)
    async with pace.slot("reactions") as slot:
        slot.unused()  # what waited was no longer worth sending
    started = time.monotonic()
    async with pace.slot("reactions"):
        assert time.monotonic() - started < 0.02  # the unsent one took no room
        await asyncio.sleep(0.3)  # the request, answered slowly
    answered = time.monotonic()
    async with pace.slot("reactions"):
        pass
    assert 0.18 <= time.monotonic() - answered < 0.4  # a window from the answer, not the start


async def test_a_refusal_fills_the_channels_bucket_until_it_ends() -> None:
    pace = ChannelPace(limit=5, window_s=1.0)
    pace.back_off("refused", retry_after_s=0.2)
    started = time.monotonic()
    async with pace.slot("refused"):
        pass
    assert 0.15 <= time.monotonic() - started < 0.4


async def test_an_intermediate_write_leaves_the_windows_last_room_for_the_last_text() -> None:
    pace = ChannelPace(limit=3, window_s=0.3)
    for key in ("refreshed", "ended"):
        async with pace.slot(key):  # the first text
            pass
    started = time.monotonic()
    for key in ("refreshed", "ended"):
        async with pace.slot(key, spaced=True):  # a refresh, at the steady pace: 0.1 s on
            pass
    assert 0.08 <= time.monotonic() - started < 0.2
    async with pace.slot("ended"):  # the last text takes the room left at once
        pass
    assert time.monotonic() - started < 0.2
    async with pace.slot("refreshed", spaced=True):  # another refresh leaves it free
        pass
    assert time.monotonic() - started >= 0.28  # until the window let the first one go


def test_typing_is_taken_only_when_nothing_waits() -> None:
    async def run() -> list[bool]:
        budget = RequestBudget(rate_per_s=10, burst=2)
        free = budget.take_if_free()
        await budget.take(Urgency.FIRST)  # the burst is spent
        spent = budget.take_if_free()
        await asyncio.sleep(0.11)  # one more may leave now, but a write waits for it
        waiting = asyncio.create_task(budget.take(Urgency.MORE))
        await asyncio.sleep(0)
        behind = budget.take_if_free()
        await waiting
        budget.close()
        return [free, spent, behind]

    assert asyncio.run(run()) == [True, False, False]
