"""Which models are worth asking: a model that just stalled or failed is skipped for a while.

Without this, a primary model that accepts connections and never answers makes every message
wait its whole first-token budget (five minutes by default) before the fallback answers, and
nothing is learned. So each model's part in a turn is judged (`judged`): a stall or a failure
of the provider itself marks it sick; an answer marks it well. While a model is sick, turns
start on the next model of its chain (the last one is always asked: a chain never skips every
model), and a probe, one at a time across every process, decides when it is trusted again.

The judgement is written here, once; where it is kept (the database every process shares), and
the probing, live in `tomori.monitoring.model_health`, behind `ModelHealth`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from tomori.generation.results import StreamResult, StreamStatus, TimeoutPhase
from tomori.providers.base import ProviderErrorKind


class Ailment(StrEnum):
    """Why a model is skipped, in words the log and `/tomori status` show."""

    FIRST_TOKEN_STALL = "stalled before its first token"
    IDLE_STALL = "stalled mid-answer"
    SERVER_ERROR = "failed with a server error"
    CONNECTION = "could not be reached"
    CUT_SHORT = "ended an answer without finishing it"
    RATE_LIMITED = "is rate limiting"


SICKENING_ERRORS = {
    ProviderErrorKind.SERVER_ERROR: Ailment.SERVER_ERROR,
    ProviderErrorKind.CONNECTION: Ailment.CONNECTION,
    ProviderErrorKind.CUT_SHORT: Ailment.CUT_SHORT,
    ProviderErrorKind.RATE_LIMITED: Ailment.RATE_LIMITED,
}
"""Failures another try soon would likely meet again. A refused key or a bad request is the
bot's configuration, not the model's health: every turn meets it at once, and says so."""


@dataclass(frozen=True, slots=True)
class Sick:
    """A model turns skip: why, since when, and when a probe may ask it again (the
    database's clock, seconds since the epoch)."""

    label: str
    ailment: Ailment
    since: float
    probe_at: float


class Diagnosis(StrEnum):
    WELL = "well"
    SICK = "sick"
    UNJUDGED = "unjudged"
    """/kill, a bad request, a refused key: nothing learned of the model's health."""


def judged(status: StreamStatus, last: StreamResult | None) -> tuple[Diagnosis, Ailment | None]:
    """What a model's part in a turn (how it ended, and its last pass) says of its health."""
    if status in (
        StreamStatus.COMPLETED,
        StreamStatus.FUNCTION_CALL,
        StreamStatus.EMPTY_RESPONSE,
    ):
        return Diagnosis.WELL, None
    if last is not None and (timed_out := last.timed_out) is not None:
        if timed_out.phase is TimeoutPhase.FIRST_TOKEN:
            return Diagnosis.SICK, Ailment.FIRST_TOKEN_STALL
        return Diagnosis.SICK, Ailment.IDLE_STALL
    error = last.error if last is not None else None
    if error is not None and error.kind in SICKENING_ERRORS:
        return Diagnosis.SICK, SICKENING_ERRORS[error.kind]
    return Diagnosis.UNJUDGED, None


class ModelHealth(Protocol):
    """What the model chain asks of the health of its models, and tells it."""

    def sick(self, label: str) -> Sick | None:
        """Whether turns skip the model now (from what is known here: no waiting)."""
        ...

    def attempted(self, label: str, verdict: Diagnosis, ailment: Ailment | None) -> None:
        """A turn asked the model, and this is what it showed (recorded in the background)."""
        ...
