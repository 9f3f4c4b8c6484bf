"""The durable half of the channel locks, as intents: each call is one transaction.

The registry decides nothing about rows and the backend decides nothing about turns: the
registry says what this process runs (a channel's running turn id, whether it is closing) and
the backend reads the rows, applies `rules` with the database's clock, and writes the outcome.
A call that fails with an error the backend calls transient (`is_transient`) changed nothing
and may be tried again whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from tomori.config.settings import Settings, seconds
from tomori.locks.rules import LockState
from tomori.locks.vocabulary import Admission, Trigger, Turn, TurnStop
from tomori.store.base import Database


@dataclass(frozen=True, slots=True)
class Progress:
    """A running turn's progress, for the database: how long ago, and whether it is exempt."""

    channel_id: str
    turn_id: str
    idle_s: float
    watchdogs: int
    answered: bool
    """The turn has shown something in the channel: it must never run again."""


@dataclass(frozen=True, slots=True)
class StopRequest:
    """A /kill (`requester_id` set) or an interruption by the turn's user (`interrupted`, a
    `KillReason` that keeps the queue) written for a turn this instance runs."""

    channel_id: str
    turn_id: str
    requester_id: str | None
    interrupted: str | None = None


@dataclass(frozen=True, slots=True)
class Admitted:
    """How admitting a trigger went: the lock's verdict, and the turn to begin, if any (the
    trigger's own, or an older queued one's, with the trigger queued behind it).

    `already` is set when the message was admitted before (a retry whose first commit landed,
    or the same message delivered to two processes): QUEUED while it waits, STARTED while its
    turn holds the channel (`turn` is that turn when it is this instance's: begin it if it is
    not running), IGNORED once it was answered or runs elsewhere.
    """

    verdict: LockState
    turn: Turn | None
    already: Admission | None = None
    follow_up: bool = False
    """The trigger was queued first as a follow-up, and the running turn asked to stop."""
    full: bool = False
    """Not queued: its author has as many messages waiting in the channel as one may."""


class LockBackend(Protocol):
    """Lock rows, queued triggers and instance rows in one database shared by every process."""

    @property
    def instance_id(self) -> str: ...

    async def register(self) -> None:
        """Record this instance as alive."""
        ...

    async def heartbeat(self) -> None:
        """Say again that this instance is alive."""
        ...

    async def unregister(self) -> None: ...

    async def orphaned_channels(self) -> list[str]:
        """Channels whose lock owner is gone, or whose queue has no lock: they need a hand-off."""
        ...

    async def recover(self, channel_id: str) -> Turn | None:
        """Hand an orphaned channel to its next queued trigger, if it is still orphaned."""
        ...

    async def forget_dead_instances(self) -> None: ...

    async def live_processes(self) -> int:
        """How many processes serve from this database now, this one included."""
        ...

    def report_expired(self, report: Callable[[Sequence[Trigger]], None]) -> None:
        """Call `report`, once each transaction commits, with the queued triggers it dropped
        unanswered: too old to answer (`TOMORI_QUEUE_MAX_AGE_MS`), or queued behind a stale
        lock. (What a /kill clears, `stop_and_clear` returns to it.)"""
        ...

    async def admit(self, trigger: Trigger, given_up_turn_id: str | None) -> Admitted:
        """Start a turn for `trigger`, or queue it: the verdict says which (a free one starts).
        `given_up_turn_id`: the channel's turn this process gave up, if any (see `rules.judge`)."""
        ...

    async def stop_and_clear(
        self, channel_id: str, requester_id: str, given_up_turn_id: str | None
    ) -> tuple[LockState, list[Trigger]]:
        """/kill: ask the channel's holder to stop (or free a row no live turn stands behind),
        and clear its queue. Returns the lock's verdict and the triggers cleared, oldest
        first."""
        ...

    async def stop_for(
        self,
        channel_id: str,
        requester_id: str,
        given_up_turn_id: str | None,
        *,
        clear_anyway: bool = False,
    ) -> tuple[bool, list[Trigger]]:
        """A stop word, or their own /kill: if the channel's turn is `requester_id`'s, ask it
        to stop, keeping the others' queue, and clear what they queued (`clear_anyway`: even
        when the turn running is another's). Returns whether it was theirs, and their triggers
        it cleared, oldest first."""
        ...

    async def stop_turn(
        self,
        channel_id: str,
        turn_id: str,
        presser_id: str,
        given_up_turn_id: str | None,
        *,
        any_turn: bool,
    ) -> TurnStop:
        """A press of turn `turn_id`'s Stop button (`rules.pressed_stop`): if that turn holds
        the channel and `presser_id` may stop it, ask it to stop, keeping the queue."""
        ...

    async def hand_off(
        self,
        channel_id: str,
        turn_id: str,
        *,
        discard_queue: bool,
        closing: bool,
        replay: bool = False,
    ) -> Turn | None:
        """Release `turn_id`'s lock if it still holds the channel, giving the channel to the next
        queued trigger (unless `discard_queue` or `closing`). With `replay`, the turn's own
        trigger goes back to the head of the queue first (it was cut before it answered)."""
        ...

    async def record_progress(self, progress: Sequence[Progress]) -> set[tuple[str, str]]:
        """Write progress in one transaction; return the (channel, turn) locks this instance
        still holds (a turn missing from it was taken over)."""
        ...

    async def stop_requests(self) -> list[StopRequest]:
        """The stop requests written into the rows this instance holds."""
        ...

    async def wait_for_stop_requests(self) -> None:
        """Return when stop requests may have arrived (polled, or announced by the database)."""
        ...

    async def wait_for_departure(self) -> None:
        """Return when another process announces it stopped (`unregister`), leaving channels
        to serve; never, where the database cannot announce (the heartbeat finds them)."""
        ...

    async def requester_of(self, channel_id: str) -> str | None: ...

    async def queued_message_ids(self, channel_id: str) -> set[str]: ...

    async def queued_count(self) -> int:
        """Triggers waiting in every channel's queue, of every process."""
        ...

    async def has_room(self, channel_id: str, requester_id: str | None) -> bool:
        """Whether the member may queue one more message in the channel now: fewer than
        `TOMORI_QUEUE_PER_MEMBER` of theirs wait there (one more is refused as full)."""
        ...

    def is_transient(self, error: BaseException) -> bool: ...

    def is_database_error(self, error: BaseException) -> bool: ...

    async def wait_for_pending(self) -> None: ...

    async def close(self) -> None:
        """Stop listening; the database itself belongs to whoever opened it."""
        ...


def lock_backend(database: Database, settings: Settings) -> LockBackend:
    """The lock backend for `database`'s engine, with the settings' lock and queue budgets.

    The engines' modules are imported here: each is built on this protocol, and asyncpg is
    imported only when PostgreSQL is used."""
    budgets = (
        seconds(settings.channel_lock_timeout_ms),
        seconds(settings.queue_max_age_ms),
        settings.queue_per_member,
    )
    if database.engine == "postgres":
        from tomori.locks.postgres import ListeningDatabase, PostgresLockBackend

        return PostgresLockBackend(cast(ListeningDatabase, database), *budgets)
    from tomori.locks.sqlite import SqliteLockBackend

    return SqliteLockBackend(database, *budgets)
