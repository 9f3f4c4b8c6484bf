"""The lock rules, each written once, as functions of plain values.

The backends read rows and pass them here with the database's clock; the registry passes its
own turns with this process's monotonic clock. Nothing here reads a clock or a database.

Rules kept from TomoriBot, the bot this cog's behaviour was taken from:
- A lock with no watchdog token and no progress for `CHANNEL_LOCK_TIMEOUT_MS` is stale: the
  next trigger or /kill releases it, stopping its turn and discarding its queue.
- A lock whose owner is gone is taken over, and its queue is served, not discarded.
- A lock whose row says a stop was requested reads as "unwinding": new triggers are ignored,
  so the queue /kill just emptied is not refilled.

Silence (no progress, no heartbeat) is counted from `up_since` at the earliest: when the
database last came up, or the judging process got it back after losing it (-inf when neither
happened). While it was down or out of reach nobody could write, so a process that streamed on
through an outage is neither stale nor dead the moment the database is back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from tomori.locks.vocabulary import KillReason, TurnStop

MIN_HEARTBEAT_INTERVAL_S = 1.0
MISSED_HEARTBEATS_FOR_DEATH = 3


@dataclass(frozen=True, slots=True)
class LockRow:
    """A channel's lock as the database holds it; times are on the database's clock."""

    owner: str
    turn_id: str
    last_progress_at: float
    watchdogs: int
    stop_requested_by: str | None


@dataclass(frozen=True, slots=True)
class InstanceRow:
    """A process that serves locks: where it runs, and when it last said it is alive."""

    host: str
    pid: int
    process_token: str
    heartbeat_at: float


class LockState(StrEnum):
    """What a channel's lock row means to a process about to act on the channel."""

    FREE = "free"
    HELD = "held"
    STOPPING = "stopping"  # held, and /kill asked its turn to stop
    ABANDONED_HERE = "abandoned here"  # ours, but this process gave that turn up
    OWNER_GONE = "owner gone"
    STALE = "stale"

    @property
    def is_free(self) -> bool:
        """Whether the channel may be given to a new turn now."""
        return self not in (LockState.HELD, LockState.STOPPING)

    @property
    def discards_queue(self) -> bool:
        """A stale lock's queue goes with it: those messages waited on a turn that hung."""
        return self in (LockState.ABANDONED_HERE, LockState.STALE)


def silent_s(now: float, last_written_at: float, up_since: float) -> float:
    """How long a row's writer has said nothing, not counting time the database was down."""
    return now - max(last_written_at, up_since)


def is_stale(watchdogs: int, idle_s: float, lock_timeout_s: float) -> bool:
    """A lock is stale when no watchdog token exempts it and it made no progress in time."""
    return watchdogs == 0 and idle_s > lock_timeout_s


def judge(
    row: LockRow | None,
    *,
    me: str,
    given_up_turn_id: str | None,
    owner_alive: bool,
    now: float,
    lock_timeout_s: float,
    up_since: float = -math.inf,
) -> LockState:
    """The state of a channel's lock, for the instance `me`.

    A row of `me` stands for a turn it runs or is handing the channel to, unless it is the turn
    `me` gave up (`given_up_turn_id`: released as stale, or a release that failed). Knowing the
    turns given up rather than the ones running keeps a turn just handed on, which its registry
    has not begun yet, from reading as abandoned. `owner_alive` is only asked of another
    instance's row.
    """
    if row is None:
        return LockState.FREE
    held = LockState.STOPPING if row.stop_requested_by is not None else LockState.HELD
    if row.owner == me:
        return LockState.ABANDONED_HERE if row.turn_id == given_up_turn_id else held
    if not owner_alive:
        return LockState.OWNER_GONE
    if is_stale(row.watchdogs, silent_s(now, row.last_progress_at, up_since), lock_timeout_s):
        return LockState.STALE
    return held


MAX_FOLLOW_UPS = 3
"""Follow-ups in a row that may each stop a turn of their user; past them, messages queue."""


@dataclass(frozen=True, slots=True)
class FollowUpRow:
    """What a channel's lock row says of the follow-ups its turn takes."""

    requester_id: str | None
    follow_up_key: str | None
    follow_ups: int
    interrupted: str | None


def takes_follow_up(lock: FollowUpRow, requester_id: str | None, key: str | None) -> bool:
    """Whether a message of `requester_id` addressed as `key` is a follow-up of the lock's turn:
    the same user, addressed the same (a key of None takes and is none), while the turn has
    not met the limit of follow-ups in a row, nor been stopped by its user (a stop word, its
    Stop button)."""
    return (
        requester_id is not None
        and requester_id == lock.requester_id
        and key is not None
        and key == lock.follow_up_key
        and lock.follow_ups < MAX_FOLLOW_UPS
        and (lock.interrupted is None or not KillReason(lock.interrupted).is_users_stop)
    )


@dataclass(frozen=True, slots=True)
class HeldTurn:
    """The turn a channel's lock holds, as a press of a Stop button needs it."""

    turn_id: str
    requester_id: str | None


def pressed_stop(
    held: HeldTurn | None, turn_id: str, presser_id: str, *, any_turn: bool
) -> TurnStop:
    """What a press of turn `turn_id`'s Stop button by `presser_id` does while `held` holds the
    channel (None: nothing runs): each button names its turn, so it stops that turn alone,
    never a newer one; and only for its asker, or for one who may stop any (`any_turn`:
    /kill's policy)."""
    if held is None or held.turn_id != turn_id:
        return TurnStop.ENDED
    if not any_turn and held.requester_id != presser_id:
        return TurnStop.NOT_YOURS
    return TurnStop.STOPPED


def button_stop(held: HeldTurn, presser_id: str) -> KillReason:
    """Why a press of its Stop button stops `held`: its asker's own press, or another's (one
    who may stop any answer): the turn's account says which, never who by name."""
    if held.requester_id == presser_id:
        return KillReason.STOP_BUTTON
    return KillReason.MODERATORS_STOP_BUTTON


def heartbeat_interval_s(lock_timeout_s: float) -> float:
    """How often a process says it is alive: three times per stale window, at most once a second."""
    return max(MIN_HEARTBEAT_INTERVAL_S, lock_timeout_s / 3)


def dead_after_s(lock_timeout_s: float) -> float:
    """How long an instance may be silent before its locks are taken over."""
    return heartbeat_interval_s(lock_timeout_s) * MISSED_HEARTBEATS_FOR_DEATH


def is_alive(
    instance: InstanceRow | None,
    *,
    here_host: str,
    token_of: Callable[[int], str | None],
    now: float,
    lock_timeout_s: float,
    up_since: float = -math.inf,
) -> bool:
    """Whether the instance that wrote a lock can still be serving it.

    On this host its process is asked directly (`token_of(pid)`, pid plus start time): a process
    that is gone, or whose pid now names another process (a container restart, where the bot is
    pid 1 again), is dead at once. Elsewhere, it is dead after a missed heartbeat window.
    """
    if instance is None:
        return False
    if instance.host == here_host and token_of(instance.pid) != instance.process_token:
        return False
    return silent_s(now, instance.heartbeat_at, up_since) <= dead_after_s(lock_timeout_s)


def too_old(received_at: float, now: float, queue_max_age_s: float) -> bool:
    """A queued trigger older than `TOMORI_QUEUE_MAX_AGE_MS` is dropped, not answered late."""
    return now - received_at > queue_max_age_s
