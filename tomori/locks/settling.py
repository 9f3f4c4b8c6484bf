"""Waiting for the tasks an owner keeps until none is left unfinished.

An owner keeps its tasks in a collection each leaves by its done callback. A task that has just
ended may still be there, its callback not run yet; and `asyncio.gather` of only ended tasks
completes without yielding to the loop (Python 3.12 finishes it eagerly), so a loop that
gathered whatever is listed until the list is empty never let that callback run: it spun on the
CPU, the whole event loop with it (a test's wait for a channel's marks hung the bot).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any


async def settle(listed: Callable[[], Iterable[asyncio.Future[Any]]]) -> None:
    """Return once every task `listed()` names has ended, new ones started meanwhile too;
    the ended ones are skipped, not awaited, and their failures are their owners' to see."""
    while running := [task for task in listed() if not task.done()]:
        await asyncio.gather(*running, return_exceptions=True)
