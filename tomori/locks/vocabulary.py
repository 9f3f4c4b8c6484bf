"""The vocabulary of the channel locks: what asks for a turn, the turn, and how asking went."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
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
    STOP_WORD = "stop_word"
    """The turn's user wrote a stop word: it stops as for /kill, the others' queue stays."""
    FOLLOW_UP = "follow_up"
    """The turn's user wrote again: it stops, and their new message is answered next."""
    STOP_BUTTON = "stop_button"
    """Its asker pressed its answer's Stop button: it stops as for /kill, and the queue stays
    (the press stops that turn alone)."""
    MODERATORS_STOP_BUTTON = "moderators_stop_button"
    """Another who may stop any answer there (a moderator, or anyone under the `anyone`
    policy) pressed its Stop button: as `STOP_BUTTON`; its account says who."""

    @property
    def is_users_stop(self) -> bool:
        """Whether someone asked the turn to stop (a stop word, its Stop button): its row
        takes no follow-up from then on, and a follow-up does not replace the stop."""
        return self in (
            KillReason.STOP_WORD,
            KillReason.STOP_BUTTON,
            KillReason.MODERATORS_STOP_BUTTON,
        )


KillCallback = Callable[[KillReason], None]


@dataclass(frozen=True, slots=True)
class Trigger:
    """A message that asked for a reply, with everything needed to replay it after a restart.

    `payload` is the cog's own JSON-serialisable description of the turn to run.
    `received_at` is this process's clock; the database keeps how long ago it was, on its own.
    `follow_up_key` says whom the message is addressed to, in the cog's words (None: it is
    never a follow-up, nor does its turn take any): a message of the turn's user with the same
    key, while the turn runs, is a follow-up. `follow_ups` counts the follow-ups in a row that
    led to it (0: it is not one).
    """

    channel_id: str
    message_id: str | None = None
    requester_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    received_at: float = field(default_factory=time.time)
    follow_up_key: str | None = None
    follow_ups: int = 0


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
    FOLLOW_UP = "follow_up"
    """Queued first, as the latest follow-up of the running turn's user; that turn stops."""
    IGNORED = "ignored"
    FAILED = "failed"  # the database stayed out of reach for longer than the queue's age limit
    QUEUE_FULL = "queue_full"
    """Not queued: its author has `TOMORI_QUEUE_PER_MEMBER` messages waiting there already."""


class TurnStop(StrEnum):
    """How a press of a turn's Stop button went (`ChannelLocks.stop_turn`)."""

    STOPPED = "stopped"
    """The turn stops (or was stopping already)."""
    ENDED = "ended"
    """The turn no longer runs: it ended, or another took the channel since."""
    NOT_YOURS = "not_yours"
    """The turn runs, but the presser may not stop it: it is another's, and they may stop
    only their own."""
    FAILED = "failed"
    """The database stayed out of reach, and the turn does not run here: unknown."""


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

    def stop_reason(self) -> KillReason | None:
        """Why the turn was asked to stop (/kill, a stop word, a follow-up); None if it was
        not: what `/tomori status` counts it as."""
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

    def calling_tools(self) -> None:
        """Say the model called a tool: from here to the turn's end a follow-up does not stop
        it, so the tools' effects finish and the answer uses their results; the follow-up is
        answered next. (A stop word or /kill still stops it.)"""
        ...

    def cut_short(self, tool: str) -> None:
        """Say the stop that ended the turn cut a call of `tool` short: the next turn's model
        is told so, and does not call it again unasked (`tomori.locks.stopped`)."""
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

ClearedTeller = Callable[[Sequence[Trigger], str | None], Awaitable[None]]
"""Shows the triggers one /kill or stop word cleared (in one channel, oldest first) as
cleared, and who cleared them (their own are among them: their marks and accounts say so;
they are not told, they know); the others are told together: each may hear once for the
kill, however many they had."""
