"""What a log line says of the turn it is about: the turn's id, its channel, the model asked
and how the turn ended. A module of the core's top, beside `errors.py`: every layer that logs
about a turn may note to it.

`tomori.turns.turn.play` opens a turn's fields for the task that runs it (a context variable,
which every task it starts inherits), the chain notes each model it asks, and the answer its
outcome. `TurnFields`, a logging filter on the handler, copies them onto every record logged
meanwhile, for the JSON lines to carry (`tomori.log_lines`); a line about no turn carries none.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

FIELDS = ("turn_id", "channel_id", "model", "outcome")
"""The record attributes a turn's lines carry, as `TurnFields` sets them."""


@dataclass(slots=True)
class _Turn:
    turn_id: str
    channel_id: str
    model: str | None = None
    outcome: str | None = None


_current: ContextVar[_Turn | None] = ContextVar("tomori_turn_log", default=None)


@contextmanager
def turn_logged(turn_id: str, channel_id: str) -> Iterator[None]:
    """Within it, in this task and the tasks it starts, log lines are about this turn."""
    token = _current.set(_Turn(turn_id, channel_id))
    try:
        yield
    finally:
        _current.reset(token)


def note_model(label: str) -> None:
    """The turn's lines from now on are about model `label` (the chain asks it)."""
    if (turn := _current.get()) is not None:
        turn.model = label


def note_outcome(outcome: str) -> None:
    """How the turn ended, for its lines from now on (its last line says it)."""
    if (turn := _current.get()) is not None:
        turn.outcome = outcome


class TurnFields(logging.Filter):
    """Sets `FIELDS` on each record from the turn it was logged in (None outside a turn)."""

    def filter(self, record: logging.LogRecord) -> bool:
        turn = _current.get()
        for field in FIELDS:
            setattr(record, field, None if turn is None else getattr(turn, field))
        return True
