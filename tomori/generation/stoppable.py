"""Work of a turn that /kill stops at once, not when it next looks.

A turn checks `stop_requested()` between its steps, but a step that waits (a file download
from a CDN that stopped answering, a slow history read) would hold the channel until its own
deadline. Run as a task the turn's kill callback cancels, it ends the moment /kill comes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from tomori.generation.results import KillReason
from tomori.locks import TurnGuard


class Stopped(Exception):
    """/kill (or the lock being taken from the turn) stopped the work."""


async def until_stopped[T](guard: TurnGuard, work: Coroutine[Any, Any, T]) -> T:
    """`work`'s result; `Stopped` if the guard's kill came first, before it began, or while
    it ended (after the callback was cleared: the caller must not go on either way)."""
    running: asyncio.Task[T] = asyncio.create_task(work)

    def kill(reason: KillReason) -> None:
        running.cancel()

    guard.set_kill(kill)
    try:
        if guard.stop_requested():  # /kill came before the callback was set
            running.cancel()
        result = await running
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # the turn itself is cancelled: not ours to turn into Stopped
        raise Stopped from None
    finally:
        guard.clear_kill(kill)
        if not running.done():
            running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    if guard.stop_requested():
        raise Stopped
    return result
