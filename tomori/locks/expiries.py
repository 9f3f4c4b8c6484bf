"""Who asked and was dropped unanswered hears so: once across every process (the one whose
transaction dropped their trigger), in tasks owned here, each awaited or cancelled at close.

Dropped for age, or behind a stale lock, each trigger is told on its own (`ExpiryTeller`);
cleared by a /kill or a stop word, the stop's triggers are told together (`ClearedTeller`), so
that each member hears once however many they had waiting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

from tomori.locks.supervisor import CLOSING_GRACE_S
from tomori.locks.vocabulary import ClearedTeller, ExpiryTeller, Trigger

log = logging.getLogger("tomori.locks")


class ExpiryNotices:
    """Triggers dropped unanswered, told by `tell` and `tell_cleared` (None: only logged, by
    the rows and the kill)."""

    def __init__(self, tell: ExpiryTeller | None, tell_cleared: ClearedTeller | None) -> None:
        self._tell = tell
        self._tell_cleared = tell_cleared
        self._telling: set[asyncio.Task[None]] = set()

    def dropped(self, triggers: Sequence[Trigger]) -> None:
        """Triggers a committed transaction dropped: each asker is told, in a task of its own."""
        if self._tell is None:
            return
        for trigger in triggers:
            self._start(partial(self._tell, trigger), trigger, "that it was dropped")

    def cleared(self, triggers: Sequence[Trigger], by: str | None) -> None:
        """The triggers one /kill or stop word of `by` cleared, in one channel: told together,
        in a task."""
        if self._tell_cleared is not None and triggers:
            self._start(
                partial(self._tell_cleared, triggers, by), triggers[0], "that a /kill cleared it"
            )

    def _start(self, tell: Callable[[], Awaitable[None]], trigger: Trigger, what: str) -> None:
        task = asyncio.create_task(
            _told(tell, trigger, what), name=_telling_name(trigger.channel_id)
        )
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    async def told_in(self, channel_id: str) -> None:
        """Wait until everyone dropped in the channel so far has been told."""
        telling = [t for t in self._telling if t.get_name() == _telling_name(channel_id)]
        if telling:
            await asyncio.wait(telling)

    async def close(self) -> None:
        """Let what is being told be told (for a moment); cancel the rest."""
        if self._telling:
            await asyncio.wait(set(self._telling), timeout=CLOSING_GRACE_S)
        for telling in list(self._telling):
            telling.cancel()
        await asyncio.gather(*self._telling, return_exceptions=True)


async def _told(tell: Callable[[], Awaitable[None]], trigger: Trigger, what: str) -> None:
    try:
        await tell()
    except Exception:
        log.exception(
            "could not tell the asker of message %s in channel %s %s",
            trigger.message_id,
            trigger.channel_id,
            what,
        )


def _telling_name(channel_id: str) -> str:
    """The name of the task telling a dropped message's asker, in its channel."""
    return f"tomori-expired-{channel_id}"
