"""A turn's share of its asker's day: the daily tokens, held between the turn's own passes.

Admission judges a message by the tokens spent before it (`limits.quota_refusal`), but one turn
can spend far past them alone: a 100-pass tool loop, a 30-line scene, six personas answering.
So a turn carries a `TurnBudget`: the day's tokens as the turn began (the asker's and their
server's), plus each of its passes' as the pass ends. Before each pass, and before each
persona's answer or scene line, the turn asks `allows_more`; the first no is the decision, kept
(`stopped`), and the turn ends there and says so once (`refusal`). What was shown stays.

What it does not know: a pass already running finishes (its tokens are known only at its end),
and two turns of one asker at once each count from the same start, so the day may end up to
a pass past its limit for each of them; the next message is refused as ever.
"""

from __future__ import annotations

from dataclasses import dataclass

from tomori.policy.limits import Limit, Refusal, UserLimits, spent_limit
from tomori.providers.base import Usage


@dataclass(slots=True, eq=False)
class TurnBudget:
    """What one turn may spend (see the module docstring)."""

    limits: UserLimits
    tokens_before: int
    """The asker's tokens today in the server, as the turn began."""
    server_tokens_before: int
    """The server's members' tokens today, as the turn began (0 without a server budget)."""
    resets_at: float
    """The next 00:00 UTC on the database's clock: when the asker may ask again."""
    spent: int = 0
    """The turn's own tokens so far."""
    stopped: Limit | None = None
    """The limit that stopped the turn, once one did."""

    def charge(self, usage: Usage) -> None:
        self.spent += usage.input_tokens + usage.output_tokens

    def allows_more(self) -> bool:
        """Whether another pass may start; once it may not, it never may again in this turn."""
        if self.stopped is None:
            self.stopped = spent_limit(
                self.limits,
                self.tokens_before + self.spent,
                self.server_tokens_before + self.spent,
            )
        return self.stopped is None

    @property
    def refusal(self) -> Refusal | None:
        """What the asker is told once the budget stopped the turn (None: it did not)."""
        if self.stopped is None:
            return None
        return Refusal(self.stopped, self.resets_at, notify=True)
