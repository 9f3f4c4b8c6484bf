"""What a turn carries through its passes: its state.

It is the one mutable object shared by the turn, its passes and their writers: the progress
hook `stream_once` installs, where the turn reports its stage (its trigger shows it), whether
user-facing errors are held back for a pending fallback, the list of every message the turn
delivered, and the tokens it may still spend. Writers see it as an `AnswerRecord`
(`tomori.delivery.port`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tomori.delivery.notices import Notice, NoticeSink, post_notice_safely
from tomori.delivery.port import DeliveredMessage
from tomori.delivery.progress import NO_PROGRESS, ProgressHook
from tomori.generation.results import StreamResult, StreamStatus, TurnOutcome, TurnUsage
from tomori.providers.base import Usage
from tomori.tools.confirmation import Confirmer


class MetricsSink(Protocol):
    def record(self, name: str, label: str) -> None: ...

    def record_usage(self, usage: TurnUsage) -> None: ...

    def record_outcome(self, outcome: TurnOutcome) -> None: ...

    def record_tool_call(
        self, guild_id: str | None, tool: str, outcome: str, mcp_server: str | None = None
    ) -> None: ...

    def record_sprites(self, guild_id: str | None, sprites: Sequence[str]) -> None: ...


class TurnAccount(Protocol):
    """Where a turn reports what became of its message, model by model ("Why no answer?",
    `tomori.monitoring.why.MessageAccount`)."""

    def skipped(self, model: str) -> None:
        """The chain skipped `model` (its health is poor)."""
        ...

    def tried(self, model: str, status: StreamStatus, last: StreamResult | None) -> None:
        """`model`'s part ended so (`last`: its last pass)."""
        ...


class TokenBudget(Protocol):
    """What the turn may still spend of its asker's day (`tomori.policy.TurnBudget`)."""

    def charge(self, usage: Usage) -> None:
        """A pass of the turn ended, having used `usage`."""
        ...

    def allows_more(self) -> bool:
        """Whether another pass (or persona's answer) may start; a no is final."""
        ...


@dataclass(eq=False)
class TurnState:
    channel_id: str
    notices: NoticeSink
    trigger_message_id: str | None = None
    from_queue: bool = False
    scene_turn: bool = False
    suppress_user_errors: bool = False
    on_stream_progress: Callable[[], None] | None = None
    on_ceiling: Callable[[], None] | None = None
    """Set by the pass that reads the model: stops it reading once the answer is cut."""
    delivered: list[DeliveredMessage] = field(default_factory=list)
    on_first_message: Callable[[], None] | None = None
    """Called once, as the turn's first message lands: from then on the turn has answered,
    and its lock says so (`TurnGuard.mark_answered`), so it is never run again elsewhere."""
    undelivered: bool = False
    """Discord did not take the rest of an answer within the delivery deadline: the answer
    shown is cut short, which a direct trigger is told once the chain ends."""
    lost_parts: bool = False
    """A message of the answer did not land (`lost_a_part`): the rest went on, but the
    answer shown is not whole (a new take so delivered is no take to keep)."""
    metrics: MetricsSink | None = None
    guild_id: str | None = None
    """The server of the channel (None in a direct message), which its metrics are filed under."""
    confirmer: Confirmer | None = None
    """Where a call that needs its asker's yes asks for it; None: such calls are refused."""
    budget: TokenBudget | None = None
    """The asker's daily tokens, checked between passes (None: no token limit holds); shared
    by every persona's answer in the turn."""
    progress: ProgressHook = NO_PROGRESS
    """Where the turn reports its stage (`tomori.delivery.progress`): its trigger shows it."""
    failed: bool = False
    """A model chain of the turn ended without its answer (an error, a timeout, an empty
    answer, the day's tokens spent): what the turn's trigger shows as it ends."""
    first_token_by: float | None = None
    """When set, the next pass waits for its first token until then at most (`time.monotonic`),
    not its whole budget, and clears it: a retry must fit the budget of the pass it retries
    (`generation.attempt`)."""
    account: TurnAccount | None = None
    """Where the turn reports what became of its message ("Why no answer?"); None for a
    command's turn, which has no message, and in the console."""
    first_landed_at: float | None = None
    """When the turn's first send or edit landed (`time.monotonic`): its first-text latency."""

    @property
    def reply_to(self) -> str | None:
        """The message the first reply answers: a queued turn's trigger, unless in a scene.

        A queued answer would otherwise show no link to what it answers; in a scene every
        persona would show "replying to" the same message, so scenes post free-standing.
        """
        if self.from_queue and not self.scene_turn:
            return self.trigger_message_id
        return None

    def report_progress(self) -> None:
        """A send or edit landed: re-arms the pass's idle timer, and the first marks the turn
        answered."""
        if self.first_landed_at is None:
            self.first_landed_at = time.monotonic()
        hook = self.on_stream_progress
        if hook is not None:
            hook()
        first, self.on_first_message = self.on_first_message, None
        if first is not None:
            first()

    def allows_pass(self) -> bool:
        """Whether the turn's tokens allow another pass."""
        return self.budget is None or self.budget.allows_more()

    def spent(self, usage: Usage | None) -> None:
        """A pass ended, having used `usage` (None: nothing known, nothing counted)."""
        if self.budget is not None and usage is not None:
            self.budget.charge(usage)

    def reached_ceiling(self) -> None:
        hook = self.on_ceiling
        if hook is not None:
            hook()

    def lost_a_part(self) -> None:
        self.lost_parts = True

    async def post_notice(self, notice: Notice) -> None:
        """Tell the channel; a notice that cannot be posted is logged, never raised over the
        turn's own outcome."""
        await post_notice_safely(self.notices, notice, self.channel_id)
