"""Trigger messages as the library gave them, kept from their admission until their turn."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any


class LiveMessages:
    """A turn reads its trigger from here rather than asking Discord for it again.

    A trigger cleared by /kill or too old to answer never reads its message back; past
    `max_age_s` (`TOMORI_QUEUE_MAX_AGE_MS`) none will, so such messages are dropped as new ones
    come, oldest first (the dict keeps arrival order), rather than kept for the life of the bot.
    """

    def __init__(self, max_age_s: float) -> None:
        self._max_age_s = max_age_s
        self._kept: dict[str, tuple[Any, float]] = {}

    def keep(self, message_id: str, message: Any) -> None:
        cutoff = time.monotonic() - self._max_age_s
        for kept_id, (_, kept_at) in list(self._kept.items()):
            if kept_at >= cutoff:
                break
            del self._kept[kept_id]
        self._kept[message_id] = (message, time.monotonic())

    def take(self, message_id: str) -> Any:
        """The kept message, forgotten now; None if it was never kept or already dropped."""
        kept = self._kept.pop(message_id, None)
        return None if kept is None else kept[0]

    def changed(self, message_ids: Iterable[int]) -> None:
        """Messages were edited or deleted: a turn not started yet reads each one from Discord
        again, so it answers the message as it now is, or not at all if it is gone."""
        for message_id in message_ids:
            self._kept.pop(str(message_id), None)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._kept

    def __len__(self) -> int:
        return len(self._kept)
