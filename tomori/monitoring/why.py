""" "Why no answer?": what became of one message, as plain data, and the account told of it.

The intake and the turn report each step of a message's way (`Step`: refused by a limit,
queued, dropped for age, each model tried and how it ended, what was delivered) to a
`FateSink` (the runtime's `WhyBook`, which keeps them in the database for a day); the account
read back is rendered here, in words gathered below, for whoever may read it (`may_read`: the
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
    BUTTON = "button"
    """Its Stop button, pressed by the asker or a member who may stop any answer there."""


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
    KillReason.STOP_BUTTON: StoppedBy.BUTTON,
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

TITLE = "Why no answer?"
MENU_NAME = TITLE
"""The message context menu's name (Apps → "Why no answer?")."""
NOT_YOURS = Notice(
    TITLE,
    "Only the member who sent this message, or a moderator (Manage Messages), can see what "
    "became of it.",
    NoticeColour.WARNING,
)
NO_MODEL_ANSWERED = "No model answered it."
NO_RECORD = (
    "I have no record of this message: I did not see it (sent while I was away), or it is "
    "more than a day old."
)
UNREADABLE = "I cannot read my records just now: please try again in a moment."
KEPT_FOR = "Kept for a day; no message text is kept."

UNADDRESSED_WORDS = {
    Unaddressed.OWN: "It is my own message.",
    Unaddressed.FROM_BOT: "It was written by a bot or a webhook, and I answer people only here.",
    Unaddressed.PERSONA: "It is one of my personas' messages.",
    Unaddressed.NOT_A_MESSAGE: "It is a system message (a join, a pin, ...), not one to answer.",
    Unaddressed.EMPTY: "It has no text and no files.",
    Unaddressed.PREFIXED: "It begins with `!`, which marks a message as not for me.",
    Unaddressed.NOT_CALLED: (
        "It was not addressed to me: it does not mention me, reply to me or name one of my "
        "personas, and this channel is not one where I answer every message."
    ),
}
LIMIT_WORDS = {
    "cooldown": "your cooldown in this server",
    "quota": "your daily tokens in this server",
    "server's daily tokens": "this server's daily tokens",
}
OUTCOME_WORDS = {
    ModelOutcome.ANSWERED: "answered",
    ModelOutcome.STALLED: "stalled (no first word in time)",
    ModelOutcome.STALLED_MIDWAY: "stalled (went quiet mid-answer)",
    ModelOutcome.RATE_LIMITED: "429 (rate limited)",
    ModelOutcome.REFUSED: "refused (its provider's content filter)",
    ModelOutcome.KEY_REFUSED: "refused (its provider turned the key down)",
    ModelOutcome.EMPTY: "answered nothing",
    ModelOutcome.FAILED: "failed (an error)",
    ModelOutcome.STOPPED: "stopped",
    ModelOutcome.OUT_OF_TOKENS: "stopped (the daily tokens ran out)",
}
STOPPED_WORDS = {
    StoppedBy.ASKER: "The answer was stopped by you (your /kill or stop word).",
    StoppedBy.MODERATOR: "The answer was stopped by a moderator's /kill.",
    StoppedBy.BUTTON: "The answer was stopped with its Stop button.",
    StoppedBy.FOLLOW_UP: (
        "Replaced by a follow-up: you wrote again, and the next answer covers both messages."
    ),
}
UNDELIVERED_WORDS = {
    Undelivered.CUT_SHORT: "Discord did not take the rest of the answer in time: it was cut short.",
    Undelivered.FORBIDDEN: "Discord refused my post in this channel (missing permissions).",
    Undelivered.GONE: "The channel was gone before the answer could be posted.",
}
FATE_WORDS = {
    Fate.CANNOT_POST: "Not answered: I cannot post in this channel.",
    Fate.BOT_LOOP: "Not answered: bots had started too many answers in a row here.",
    Fate.STARTED: "Seen, and taken up at once.",
    Fate.QUEUED: "Seen, and queued behind another answer in this channel.",
    Fate.FOLLOW_UP: "Seen as a follow-up: the answer running for you stopped to cover it.",
    Fate.QUEUE_FULL: "Not queued: you already had as many messages waiting here as one may.",
    Fate.NOT_ADMITTED: "Not queued: my database was out of reach.",
    Fate.DROPPED_FOR_AGE: "Dropped: it waited too long in the queue, so it was not answered.",
    Fate.CLEARED: "Cleared from the queue by another member's /kill.",
    Fate.FAILED: "The turn failed before any model was asked.",
}


def refused_words(limit: str, until: float | None) -> str:
    when = "" if until is None else f" until <t:{math.ceil(until)}:f> (<t:{math.ceil(until)}:R>)"
    return f"Refused by a limit: {LIMIT_WORDS.get(limit, limit)}{when}."


def step_words(step: Step) -> str:
    """One step, as a line of the account."""
    if step.fate is Fate.REFUSED:
        return refused_words(step.subject, step.until)
    if step.fate is Fate.SKIPPED:
        return f"Model `{step.subject}`: skipped (it has been failing; a probe decides when)."
    if step.fate is Fate.TRIED:
        words = OUTCOME_WORDS.get(ModelOutcome(step.outcome), step.outcome)
        return f"Model `{step.subject}`: {words}."
    if step.fate is Fate.STOPPED:
        return STOPPED_WORDS[StoppedBy(step.outcome)]
    if step.fate is Fate.DELIVERED:
        return f"Delivered: {step.count} message{'' if step.count == 1 else 's'}."
    if step.fate is Fate.UNDELIVERED:
        return f"Delivery failed: {UNDELIVERED_WORDS[Undelivered(step.outcome)]}"
    return FATE_WORDS[step.fate]


def told(steps: Sequence[Step]) -> Notice:
    """The account of a message the bot kept steps of."""
    lines = [f"- {step_words(step)}" for step in steps]
    outcomes = [step.outcome for step in steps if step.fate is Fate.TRIED]
    if outcomes and ModelOutcome.ANSWERED not in outcomes:
        lines.append(NO_MODEL_ANSWERED)
    return Notice(TITLE, "\n".join([*lines, "", KEPT_FOR]), NoticeColour.WARNING)


def unaddressed(reason: Unaddressed) -> Notice:
    return Notice(TITLE, f"Not answered. {UNADDRESSED_WORDS[reason]}", NoticeColour.WARNING)


NO_RECORD_NOTICE = Notice(TITLE, NO_RECORD, NoticeColour.WARNING)
UNREADABLE_NOTICE = Notice(TITLE, UNREADABLE, NoticeColour.ERROR)
