"""Who asked and was dropped unanswered hears so: once across every process (the one whose
transaction dropped their trigger), in tasks owned here, each awaited or cancelled at close."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from tomori.locks.supervisor import CLOSING_GRACE_S
from tomori.locks.vocabulary import ExpiryTeller, Trigger

log = logging.getLogger("tomori.locks")


class ExpiryNotices:
    """Each trigger dropped unanswered, told by `tell` (None: only logged, by the rows)."""

    def __init__(self, tell: ExpiryTeller | None) -> None:
        self._tell = tell
        self._telling: set[asyncio.Task[None]] = set()

    def dropped(self, triggers: Sequence[Trigger]) -> None:
        """Triggers a committed transaction dropped: each asker is told, in a task of its own."""
        if self._tell is None:
            return
        for trigger in triggers:
            telling = asyncio.create_task(
                self._told(self._tell, trigger), name=_telling_name(trigger.channel_id)
            )
            self._telling.add(telling)
            telling.add_done_callback(self._telling.discard)

    async def _told(self, tell: ExpiryTeller, trigger: Trigger) -> None:
        try:
            await tell(trigger)
        except Exception:
            log.exception(
                "could not tell the asker of message %s in channel %s that it was dropped",
                trigger.message_id,
                trigger.channel_id,
            )

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


def _telling_name(channel_id: str) -> str:
    """The name of the task telling a dropped message's asker, in its channel."""
    return f"tomori-expired-{channel_id}"
