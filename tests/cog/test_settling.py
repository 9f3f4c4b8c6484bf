"""Waiting for a channel's marks returns when the last one has just ended.

`TomoriChat.wait_idle` waits for the marks of a channel (`ProgressMarks.settled`). A mark's task
that had ended in the same turn of the loop, its done callback not run yet, stayed listed; its
gather finished without yielding, so the wait spun on the CPU and the bot's loop with it (a
test of refused reactions hung for a quarter of an hour on a loaded machine).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, cast

import pytest

from tomori_cog.progress_marks import ProgressMarks, TriggerMarks

CHANNEL_ID = 4


def no_spinning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spin would never give the loop back, so no timeout could end it: count the gathers."""
    gather = asyncio.gather
    calls = 0

    def counted(*awaitables: Any, **options: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls > 100:
            raise AssertionError("the wait spins on tasks that have ended")
        return gather(*awaitables, **options)

    monkeypatch.setattr(asyncio, "gather", counted)


async def ended_but_listed(run: Callable[[Awaitable[None]], asyncio.Task[None]]) -> None:
    """Start a task through `run`, and return in the loop's turn in which it ended: before
    its done callback has taken it off its owner's list."""
    release = asyncio.get_running_loop().create_future()

    async def mark() -> None:
        await release

    task = run(mark())
    await asyncio.sleep(0)  # it waits
    release.set_result(None)  # it is woken first, this test right after it
    await asyncio.sleep(0)
    assert task.done()


async def test_a_channels_marks_are_settled_when_the_last_has_just_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marks = ProgressMarks(None, cast(Any, None), cast(Any, None), cast(Any, None))
    port = cast(TriggerMarks, SimpleNamespace(channel=SimpleNamespace(id=CHANNEL_ID)))
    await ended_but_listed(lambda work: marks.run(port, work))
    no_spinning(monkeypatch)
    await marks.settled(CHANNEL_ID)
