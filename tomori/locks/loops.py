"""The registry's background loops (progress, stop requests, heartbeat), with one life cycle.

Each loop is a step run again and again in a task this object owns; `close` cancels and awaits
them all. A step that fails is logged once per spell of failures (not once per second while
the database is out of reach), and the loop goes on after a pause: the next step may succeed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from tomori.store.outage import reported

log = logging.getLogger("tomori.locks")

Step = Callable[[], Awaitable[None]]


class BackgroundLoops:
    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, what: str, step: Step, *, pause_after_failure_s: float) -> None:
        """Run `step` until closed; `what` names it in task names and log lines."""
        self._tasks.append(
            asyncio.create_task(
                _repeat(what, step, pause_after_failure_s), name=f"tomori-{what.replace(' ', '-')}"
            )
        )

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()


async def _repeat(what: str, step: Step, pause_after_failure_s: float) -> None:
    failing = False
    quiet = False  # the store reported the failure (an outage): no traceback, no warning
    while True:
        try:
            await step()
        except Exception as error:
            if not failing:
                quiet = reported(error)
                log.log(
                    logging.DEBUG if quiet else logging.WARNING,
                    "%s failed; retrying until it succeeds",
                    what,
                    exc_info=not quiet,
                )
            failing = True
            await asyncio.sleep(pause_after_failure_s)
            continue
        if failing:
            log.log(logging.DEBUG if quiet else logging.INFO, "%s works again", what)
        failing = False
