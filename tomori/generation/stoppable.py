"""Work of a turn that /kill stops at once, not when it next looks: one helper, `until_stopped`.

A turn checks `stop_requested()` between its steps, but a step that waits (a file download
from a CDN that stopped answering, a slow history read, a tool) would hold the channel until
its own deadline. Run as a task the turn's kill callback cancels, it ends the moment /kill
comes, with `Stopped`. A provider pass is the one step that does not go through here: its
kill must keep what the pass already delivered (`stream_once`'s own kill switch).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from tomori.errors import TomoriError
from tomori.locks.vocabulary import KillReason, TurnGuard


class Stopped(TomoriError):
    """/kill (or the lock being taken from the turn) stopped the work."""


async def until_stopped[T](
    guard: TurnGuard,
    work: Coroutine[Any, Any, T],
    *,
    timeout_s: float | None = None,
    watched: bool = False,
    name: str | None = None,
) -> T:
    """`work`'s result; `Stopped` if the guard's kill came first, before it began, or while
    it ended (after the callback was cleared: the caller must not go on either way).

    `timeout_s` bounds it (`TimeoutError` past it). `watched` runs it under the lock's
    watchdog, exempt from stale expiry: only for work `timeout_s` bounds.
    """
    running: asyncio.Task[T] = asyncio.create_task(work, name=name)

    def kill(reason: KillReason) -> None:
        running.cancel()

    guard.set_kill(kill)
    try:
        if guard.stop_requested():  # /kill came before the callback was set
            running.cancel()
        async with asyncio.timeout(timeout_s):
            result = await (guard.run_under_watchdog(running) if watched else running)
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
