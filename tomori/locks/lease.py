"""A lease: what only the process running a turn knows of it, and the turn's guard.

The database holds who owns a channel; the lease holds what cannot be written there: the
turn's task, its kill callback, its watchdog tokens, the stops holding its hand-off, and when it
last made progress (on this process's monotonic clock, so a wall clock jump never makes a turn
stale). Its state only moves forward: running, then maybe interrupted (its user's stop word or
follow-up: the queue stays), then maybe stopping (/kill asked), then released (the channel is
being handed on, or was taken from it). The generation code sees it only as a `TurnGuard`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum

from tomori.locks import rules
from tomori.locks.vocabulary import KillCallback, KillReason, T, Turn

log = logging.getLogger("tomori.locks")


class LeaseState(StrEnum):
    RUNNING = "running"
    STOPPING = "stopping"  # /kill asked, here or in another process; the turn is unwinding
    INTERRUPTED = "interrupted"  # a stop word, a follow-up, its Stop button; the queue stays
    RELEASED = "released"  # the channel is being handed on (maybe retrying), or was taken


_WHY_INTERRUPTED = {
    KillReason.FOLLOW_UP: "a follow-up came",
    KillReason.STOP_BUTTON: "its asker pressed its Stop button",
    KillReason.MODERATORS_STOP_BUTTON: "a moderator pressed its Stop button",
}


class Lease:
    """One running turn's hold on its channel, in the process that runs it."""

    def __init__(
        self,
        turn: Turn,
        on_progress: Callable[[Lease], None],
        on_answered: Callable[[Lease], None],
    ) -> None:
        self.turn = turn
        self.state = LeaseState.RUNNING
        self.task: asyncio.Task[None] | None = None
        self.began_at = time.monotonic()
        self.last_progress_at = self.began_at
        self._on_progress = on_progress
        self._on_answered = on_answered
        self._watchdogs: set[object] = set()
        self._kill: KillCallback | None = None
        self.answered = False
        """Whether the turn showed something in the channel (so it must never run again)."""
        self._calling_tools = False
        self._stop_reason: KillReason | None = None
        self.cut_tool: str | None = None
        """The tool call the stop that ended the turn cut short, if any."""
        self._hand_off_holds = 0
        self._hand_off_free = asyncio.Event()
        self._hand_off_free.set()

    # -- the turn's guard -------------------------------------------------------------------

    def stop_requested(self) -> bool:
        return self.state in (LeaseState.STOPPING, LeaseState.INTERRUPTED)

    def killed(self) -> bool:
        """Whether /kill stopped the turn (not its user's stop word or follow-up): the queue
        goes with it, and new messages are ignored while it unwinds."""
        return self.state is LeaseState.STOPPING

    def stop_reason(self) -> KillReason | None:
        return self._stop_reason

    def touch(self) -> None:
        if self.state is not LeaseState.RELEASED:
            self.last_progress_at = time.monotonic()
            self._on_progress(self)

    async def run_under_watchdog(self, work: Awaitable[T]) -> T:
        # Tokens are per phase, so a phase of a killed turn removing its token can never lift
        # the exemption of another phase.
        token = object()
        self._watchdogs.add(token)
        self.touch()
        try:
            return await work
        finally:
            self._watchdogs.discard(token)
            self.touch()

    def set_kill(self, kill: KillCallback) -> None:
        self._kill = kill

    def clear_kill(self, kill: KillCallback) -> None:
        if self._kill is kill:  # an old pass never erases a newer one's callback
            self._kill = None

    def calling_tools(self) -> None:
        self._calling_tools = True

    def cut_short(self, tool: str) -> None:
        self.cut_tool = tool

    def mark_answered(self) -> None:
        if not self.answered:
            self.answered = True
            self._on_answered(self)  # written at once: a crash must not run it again

    # -- for the registry -------------------------------------------------------------------

    @property
    def watchdogs(self) -> int:
        return len(self._watchdogs)

    def idle_s(self) -> float:
        return time.monotonic() - self.last_progress_at

    def is_stale(self, lock_timeout_s: float) -> bool:
        # a released lease is handing the channel on, maybe retrying: not stale, just ending
        return self.state is not LeaseState.RELEASED and rules.is_stale(
            self.watchdogs, self.idle_s(), lock_timeout_s
        )

    def request_stop(self) -> None:
        """Stop the turn as /kill does: once, however many processes were asked (after an
        interruption too: its queue goes now)."""
        if self.state in (LeaseState.RUNNING, LeaseState.INTERRUPTED):
            running = self.state is LeaseState.RUNNING
            self.state = LeaseState.STOPPING
            self._stop_reason = KillReason.KILL
            if running and self._kill is not None:
                self._kill(KillReason.KILL)

    def interrupt(self, reason: KillReason) -> None:
        """Stop the turn for its own user (`reason` keeps the queue): once. A follow-up leaves
        a turn that called tools to finish (`calling_tools`)."""
        if reason is KillReason.FOLLOW_UP and self._calling_tools:
            return
        if self.state is LeaseState.RUNNING:
            log.info(
                "turn %s in channel %s stops: %s",
                self.turn.turn_id,
                self.turn.channel_id,
                _WHY_INTERRUPTED.get(reason, "its user said stop"),
            )
            self.state = LeaseState.INTERRUPTED
            self._stop_reason = reason
            if self._kill is not None:
                self._kill(reason)

    @contextmanager
    def hand_off_held(self) -> Iterator[None]:
        """Hold the channel's hand-off while inside: a stop of the turn's own user clears
        what they queued first, so the channel never goes to one of those messages."""
        self._hand_off_holds += 1
        self._hand_off_free.clear()
        try:
            yield
        finally:
            self._hand_off_holds -= 1
            if not self._hand_off_holds:
                self._hand_off_free.set()

    async def hand_off_allowed(self) -> None:
        """Return once no stop holds the channel's hand-off (`hand_off_held`)."""
        await self._hand_off_free.wait()

    def release(self) -> bool:
        """Mark the lease released; True if it was stopped by /kill (its queue goes too)."""
        stopped = self.state is LeaseState.STOPPING
        self.state = LeaseState.RELEASED
        return stopped

    def abandon(self) -> None:
        """End a turn this process can no longer vouch for: stop its stream and its task."""
        self.state = LeaseState.RELEASED
        if self._kill is not None:
            self._kill(KillReason.STALE)
        if self.task is not None:
            self.task.cancel()
