""" "Why no answer?": what became of one message, as plain data, and the account told of it.

The intake and the turn report each step of a message's way (`Step`: refused by a limit,
queued, dropped for age, each model tried and how it ended, what was delivered) to a
`FateSink` (the runtime's `WhyBook`, which keeps them in the database for a day); the account
read back is told here, in the catalog's words (`tomori.words`, `why.*`: said in the
reader's language where it is shown), to whoever may read it (`may_read`: the
message's sender, or whoever may stop any answer there, as `/kill` decides). A message the bot
holds no steps of is judged again by the reply rule (`Unaddressed`: why it was not for the
bot), else it has no record.

Content-free by construction: a step holds kinds, a model's label, a limit and times, never a
message's text, a prompt or a key.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from tomori.config.settings import KillPolicy
from tomori.delivery.notices import Notice, NoticeColour
from tomori.generation.results import StreamResult, StreamStatus, TimeoutPhase
from tomori.locks.vocabulary import Admission, KillReason
from tomori.providers.base import ProviderErrorKind
from tomori.words import Lines, Said, said


class Fate(StrEnum):
    """One step of a message's way, as the database keeps it."""

    CANNOT_POST = "cannot_post"
    BOT_LOOP = "bot_loop"
    REFUSED = "refused"
    """`subject`: the limit (`tomori.policy.limits.Limit`); `until`: when it lifts."""
    STARTED = "started"
    QUEUED = "queued"
    FOLLOW_UP = "follow_up"
    QUEUE_FULL = "queue_full"
    NOT_ADMITTED = "not_admitted"
    DROPPED_FOR_AGE = "dropped_for_age"
    CLEARED = "cleared"
    """By another's /kill (a moderator's, or anyone's under the `anyone` policy)."""
    CLEARED_OWN = "cleared_own"
    """By its asker's own /kill or stop word."""
    SKIPPED = "skipped"
    """`subject`: a model the turn skipped, its health poor."""
    TRIED = "tried"
    """`subject`: the model's label; `outcome`: a `ModelOutcome`."""
    STOPPED = "stopped"
    """`outcome`: a `StoppedBy`."""
    FAILED = "failed"
    """The turn failed before any model was asked."""
    DELIVERED = "delivered"
    """`count`: the messages the answer took."""
    UNDELIVERED = "undelivered"
    """`outcome`: a `Undelivered`."""


class ModelOutcome(StrEnum):
    ANSWERED = "answered"
    STALLED = "stalled"
    STALLED_MIDWAY = "stalled_midway"
    RATE_LIMITED = "429"
    REFUSED = "refused"
    KEY_REFUSED = "key_refused"
    EMPTY = "empty"
    FAILED = "failed"
    STOPPED = "stopped"
    OUT_OF_TOKENS = "out_of_tokens"


class StoppedBy(StrEnum):
    ASKER = "asker"
    """Their own /kill or stop word."""
    MODERATOR = "moderator"
    """A /kill of a member who may stop any answer there."""
    FOLLOW_UP = "follow_up"
    """Replaced: the asker wrote again, and the next answer covers both."""
    ASKER_BUTTON = "asker_button"
    """Its Stop button, pressed by the asker."""
    MODERATOR_BUTTON = "moderator_button"
    """Its Stop button, pressed by another who may stop any answer there."""
    BUTTON = "button"
    """Its Stop button, by either: only in steps kept (for a day) before the presser was."""


class Undelivered(StrEnum):
    CUT_SHORT = "cut_short"
    """Discord did not take the rest within the delivery deadline."""
    FORBIDDEN = "forbidden"
    GONE = "gone"


class Unaddressed(StrEnum):
    """Why the reply rule does not answer a message (`tomori_cog.listener.reply_rule`)."""

    OWN = "own"
    FROM_BOT = "from_bot"
    PERSONA = "persona"
    NOT_A_MESSAGE = "not_a_message"
    EMPTY = "empty"
    PREFIXED = "prefixed"
    NOT_CALLED = "not_called"


@dataclass(frozen=True, slots=True)
class Asked:
    """The message a step is about: where, and whose (the asker: a proxy's member)."""

    message_id: str
    channel_id: str
    asker_id: str | None


@dataclass(frozen=True, slots=True)
class Step:
    fate: Fate
    subject: str = ""
    outcome: str = ""
    until: float | None = None
    count: int = 0


class FateSink(Protocol):
    def note(self, asked: Asked, step: Step) -> None:
        """Keep `step` of `asked`'s way (cheap, synchronous: it runs inside a turn)."""
        ...


@dataclass(frozen=True, slots=True)
class MessageAccount:
    """One message's way, as its turn reports it (`tomori.generation.TurnState.account`)."""

    asked: Asked
    sink: FateSink

    def note(self, step: Step) -> None:
        self.sink.note(self.asked, step)

    def skipped(self, model: str) -> None:
        self.note(Step(Fate.SKIPPED, model))

    def tried(self, model: str, status: StreamStatus, last: StreamResult | None) -> None:
        self.note(tried(model, status, last))


@dataclass(frozen=True, slots=True)
class Account:
    """What the store holds of one message: who asked, and its steps in order."""

    askers: frozenset[str]
    steps: tuple[Step, ...]


ADMITTED = {
    Admission.STARTED: Fate.STARTED,
    Admission.QUEUED: Fate.QUEUED,
    Admission.FOLLOW_UP: Fate.FOLLOW_UP,
    Admission.QUEUE_FULL: Fate.QUEUE_FULL,
    Admission.FAILED: Fate.NOT_ADMITTED,
}
"""The step each admission is (an ignored one is another process's: it tells its own)."""

STOPS = {
    KillReason.KILL: StoppedBy.MODERATOR,
    KillReason.STOP_WORD: StoppedBy.ASKER,
    KillReason.FOLLOW_UP: StoppedBy.FOLLOW_UP,
    KillReason.STOP_BUTTON: StoppedBy.ASKER_BUTTON,
    KillReason.MODERATORS_STOP_BUTTON: StoppedBy.MODERATOR_BUTTON,
}


def tried(label: str, status: StreamStatus, last: StreamResult | None) -> Step:
    """How one model's part in a turn ended, by label (its error kind for an `error`)."""
    return Step(Fate.TRIED, label, _outcome(status, last))


def _outcome(status: StreamStatus, last: StreamResult | None) -> ModelOutcome:
    if status is StreamStatus.TIMEOUT:
        timed_out = last.timed_out if last is not None else None
        idle = timed_out is not None and timed_out.phase is TimeoutPhase.IDLE
        return ModelOutcome.STALLED_MIDWAY if idle else ModelOutcome.STALLED
    if status is StreamStatus.ERROR:
        error = last.error if last is not None else None
        kind = None if error is None else error.kind
        return _ERRORS.get(kind, ModelOutcome.FAILED) if kind else ModelOutcome.FAILED
    return _STATUSES.get(status, ModelOutcome.FAILED)


_STATUSES = {
    StreamStatus.COMPLETED: ModelOutcome.ANSWERED,
    StreamStatus.FUNCTION_CALL: ModelOutcome.ANSWERED,
    StreamStatus.EMPTY_RESPONSE: ModelOutcome.EMPTY,
    StreamStatus.STOPPED_BY_USER: ModelOutcome.STOPPED,
    StreamStatus.OUT_OF_TOKENS: ModelOutcome.OUT_OF_TOKENS,
}
_ERRORS = {
    ProviderErrorKind.RATE_LIMITED: ModelOutcome.RATE_LIMITED,
    ProviderErrorKind.CONTENT_BLOCKED: ModelOutcome.REFUSED,
    ProviderErrorKind.AUTHENTICATION: ModelOutcome.KEY_REFUSED,
}


def may_read(
    presser_id: str, sender_id: str, askers: frozenset[str], manages: bool, policy: KillPolicy
) -> bool:
    """Whether the presser may read a message's account: its sender (or the member a proxy
    reposted it for), or whoever may stop any answer there (`/kill`'s rule)."""
    return presser_id == sender_id or presser_id in askers or manages or policy is KillPolicy.ANYONE


# -- the words ---------------------------------------------------------------------------------

MENU_NAME = "Why no answer?"
"""The message context menu's name (Apps → "Why no answer?"); its other languages are the
catalog's `menu.Why no answer?`."""
SHOWN_LABEL_CHARS = 100
"""A model's label as an account shows it, at most: 24 steps of the longest still fit an
embed in every language (tests/words/test_catalog.py)."""
LIMITS = {"cooldown": "cooldown", "quota": "quota", "server's daily tokens": "server_quota"}
"""Each limit (`tomori.policy.limits.Limit`'s value, as a step keeps it) by its words' key
(`why.limit.*`); another is shown as it is."""


def _notice(description: Said, colour: NoticeColour = NoticeColour.WARNING) -> Notice:
    return Notice.of(said("title.why"), description, colour)


NOT_YOURS = _notice(said("why.not_yours"))
NO_RECORD_NOTICE = _notice(said("why.no_record"))
UNREADABLE_NOTICE = _notice(said("why.unreadable"), NoticeColour.ERROR)


def _key(kind: StrEnum) -> str:
    """A kind's words in the catalog are under its name (`ModelOutcome.RATE_LIMITED`'s
    `rate_limited`, though the database keeps it as `429`)."""
    return kind.name.lower()


def _label(model: str) -> str:
    """A model's label, cut to `SHOWN_LABEL_CHARS` (an admin's chain may name a long one)."""
    return model if len(model) <= SHOWN_LABEL_CHARS else model[: SHOWN_LABEL_CHARS - 1] + "…"


def refused_words(limit: str, until: float | None) -> Said:
    named: Said | str = said(f"why.limit.{LIMITS[limit]}") if limit in LIMITS else limit
    if until is None:
        return said("why.refused", limit=named)
    return said("why.refused_until", limit=named, at=math.ceil(until))


def step_words(step: Step) -> Said:
    """One step, as a line of the account."""
    if step.fate is Fate.REFUSED:
        return refused_words(step.subject, step.until)
    if step.fate is Fate.SKIPPED:
        return said("why.skipped", model=_label(step.subject))
    if step.fate is Fate.TRIED:
        outcome = said(f"why.outcome.{_key(ModelOutcome(step.outcome))}")
        return said("why.tried", model=_label(step.subject), outcome=outcome)
    if step.fate is Fate.STOPPED:
        return said(f"why.stopped.{_key(StoppedBy(step.outcome))}")
    if step.fate is Fate.DELIVERED:
        key = "why.delivered" if step.count == 1 else "why.delivered_many"
        return said(key, count=step.count)
    if step.fate is Fate.UNDELIVERED:
        reason = said(f"why.undelivered.{_key(Undelivered(step.outcome))}")
        return said("why.delivery_failed", reason=reason)
    return said(f"why.fate.{_key(step.fate)}")


def told(steps: Sequence[Step]) -> Notice:
    """The account of a message the bot kept steps of."""
    lines = [said("why.step", step=step_words(step)) for step in steps]
    if unanswered(steps):
        lines.append(said("why.step", step=said("why.no_model_answered")))
    return _notice(said("why.account", steps=Lines(tuple(lines))))


def unanswered(steps: Sequence[Step]) -> bool:
    """Whether models were asked and none answered, nothing was delivered, and no stop says
    why: an account says so, rather than leave a failure to be guessed."""
    outcomes = [step.outcome for step in steps if step.fate is Fate.TRIED]
    explained = {Fate.DELIVERED, Fate.STOPPED}
    answered = ModelOutcome.ANSWERED in outcomes
    return bool(outcomes) and not answered and not any(s.fate in explained for s in steps)


def unaddressed(reason: Unaddressed) -> Notice:
    return _notice(said("why.unaddressed", reason=said(f"why.unaddressed_because.{_key(reason)}")))
