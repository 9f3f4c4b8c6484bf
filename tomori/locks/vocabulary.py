"""The vocabulary of the channel locks: what asks for a turn, the turn, and how asking went."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class KillReason(StrEnum):
    """Who ended a pass through its kill callback."""

    TIMER = "timer"
    KILL = "kill"
    STALE = "stale"
    CEILING = "ceiling"
    """The answer was cut at its ceiling while the model went on: reading it is pointless."""


KillCallback = Callable[[KillReason], None]


@dataclass(frozen=True, slots=True)
class Trigger:
    """A message that asked for a reply, with everything needed to replay it after a restart.

    `payload` is the cog's own JSON-serialisable description of the turn to run.
    `received_at` is this process's clock; the database keeps how long ago it was, on its own.
    """

    channel_id: str
    message_id: str | None = None
    requester_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    received_at: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class Turn:
    """A trigger being served under the channel's lock."""

    turn_id: str
    trigger: Trigger
    from_queue: bool

    @property
    def channel_id(self) -> str:
        return self.trigger.channel_id


class Admission(StrEnum):
    STARTED = "started"
    QUEUED = "queued"
    IGNORED = "ignored"
    FAILED = "failed"  # the database stayed out of reach for longer than the queue's age limit


@dataclass(frozen=True, slots=True)
class KillOutcome:
    stopped: bool
    cleared: int

    @property
    def nothing_to_stop(self) -> bool:
        return not self.stopped and self.cleared == 0


class TurnGuard(Protocol):
    """What a running turn's generation code may do with its channel's lock, and no more."""

    def stop_requested(self) -> bool:
        """Whether /kill (here or in another process) asked this turn to stop."""
        ...

    def touch(self) -> None:
        """Record progress: the lock is not stale. Cheap; runs per chunk."""
        ...

    async def run_under_watchdog(self, work: Awaitable[T]) -> T:
        """Run `work` exempt from stale expiry. Only for work whose every path ends in
        bounded time: the exemption removes the lock's last recovery for that phase."""
        ...

    def set_kill(self, kill: KillCallback) -> None:
        """`kill` is how /kill, or a stale release, stops what the turn is doing now."""
        ...

    def clear_kill(self, kill: KillCallback) -> None:
        """Clear the kill callback only if it is still `kill` (compare-and-clear)."""
        ...

    def mark_answered(self) -> None:
        """Say the turn has shown (some of) its answer in the channel. A turn cut short by the
        bot closing is run again by the next process unless it said so: nothing shown twice,
        and no message left unanswered by a restart."""
        ...


TurnRunner = Callable[[Turn, TurnGuard], Awaitable[None]]

ExpiryTeller = Callable[[Trigger], Awaitable[None]]
"""Tells the asker that their queued trigger was dropped unanswered (too old to answer, or
queued behind a lock that went stale): nothing a user asked for is dropped in silence."""
