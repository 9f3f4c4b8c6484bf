"""Regenerate and swipe: the takes of the last answer in a channel, as rules of plain values.

The bot's (or one persona's) answer to a message, once it ended, carries buttons: Regenerate
asks the same model chain again with the same context (the channel up to the message it
answers, never what came after), and the new take replaces the answer's text; ◀ ▶ show the
takes one by one, the answer showing which ("2/3"). What the channel shows is the take on
display, so that is what every later turn reads. Only the asker may press, or a member who may
manage messages (or anyone, where `/kill` is anyone's: `KillPolicy`); a new message in the
channel, or another turn there, freezes the takes as shown (the buttons go).

An answer keeps at most `TOMORI_MAX_TAKES` takes (`regenerable`): Regenerate past them is
refused, no model asked, and ◀ ▶ still show those it has.

A new take is a turn (`TakeAsk` rides in its `TurnRequest`): it takes the channel's lock, counts
its tokens against the asker's day, and streams into the answer's own messages (`retake.py`).
A take that needs more messages than the answer has posts the rest after them (nothing newer
is in the channel, or the takes would be frozen); one that needs fewer deletes the answer's
messages it did not use. A swipe does the same with the stored take's texts.

An answer has takes only where it was one answer to one message: a scene's lines, a
`/respond`'s answer, and a turn several personas answered (each later one heard the earlier)
carry no buttons, since asking again could not show their models the same context.

Every word a reader sees of them is the catalog's (`tomori.words`): the buttons' labels and the
counter (`LABELS`, `Takes.counter`), said in the server's language, and why a press is refused
(`PressRefusal`), said in the presser's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tomori.config.settings import KillPolicy
from tomori.delivery.port import DeliveredMessage
from tomori.policy.limits import Limit, Refusal
from tomori.providers.base import Usage
from tomori.words import Said, Text, said

CUSTOM_ID_PREFIX = "tomori:take:"
"""What every take button's custom id begins with: the cog's `on_interaction` routes by it."""


class Press(StrEnum):
    """What a take button does; the last part of its custom id."""

    REGENERATE = "regenerate"
    PREVIOUS = "previous"
    NEXT = "next"
    COUNT = "count"
    """The "2/3" between the arrows: shown, never pressed (it is disabled)."""


LABELS: Mapping[Press, str] = {
    Press.PREVIOUS: "button.take.previous",
    Press.NEXT: "button.take.next",
    Press.REGENERATE: "button.take.regenerate",
}
"""The words' key of each button's label (the counter's are `Takes.counter`)."""


class TakeState(StrEnum):
    OPEN = "open"
    """Its buttons work."""
    MAKING = "making"
    """A new take is being written: no press is taken until it ends."""
    FROZEN = "frozen"
    """The channel went on: the take shown stays, and the buttons are gone."""


class PressRefusal(StrEnum):
    """Why a press does nothing, as the presser is told (ephemerally): its words' key."""

    NOT_YOURS = "reply.take.not_yours"
    FROZEN = "reply.take.frozen"
    MAKING = "reply.take.making"
    SWIPES_OFF = "reply.take.swipes_off"
    GONE = "reply.take.gone"
    NO_MORE = "reply.take.no_more"
    NOT_QUEUED = "reply.take.not_queued"
    NOT_SHOWN = "reply.take.not_shown"
    """◀ or ▶, whose take Discord did not take whole: the answer shows the take it showed."""
    ENOUGH = "reply.take.enough"
    """Regenerate, on an answer that keeps as many takes as it may (`TOMORI_MAX_TAKES`)."""

    @property
    def words(self) -> Said:
        return said(self.value)


ASKERS_LIMITS: Mapping[Limit, str] = {
    Limit.QUOTA: "reply.take.askers_quota",
    Limit.COOLDOWN: "reply.take.askers_cooldown",
}
"""The words' key of why another's press of Regenerate is held by the asker's own limit (the
server's day of tokens is everyone's: its notice says so to anyone)."""


def custom_id(answer_id: str, press: Press) -> str:
    return f"{CUSTOM_ID_PREFIX}{answer_id}:{press}"


def pressed(custom: str) -> tuple[str, Press] | None:
    """The answer and the button a take button's custom id names; None if it names none."""
    if not custom.startswith(CUSTOM_ID_PREFIX):
        return None
    answer_id, _, press = custom.removeprefix(CUSTOM_ID_PREFIX).partition(":")
    try:
        return answer_id, Press(press)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class TakeAsk:
    """What a new take's turn asks for (in its `TurnRequest`, across restarts): the answer,
    the message it answers (its context ends there), the messages that show it now (the new
    take is written into them), and the persona that gave it (None: the bot)."""

    answer_id: str
    trigger_id: str
    messages: tuple[str, ...]
    persona: str | None = None

    def encode(self) -> dict[str, Any]:
        return {
            "answer": self.answer_id,
            "trigger": self.trigger_id,
            "messages": list(self.messages),
            "persona": self.persona,
        }

    @classmethod
    def decode(cls, payload: Mapping[str, Any]) -> TakeAsk:
        persona = payload.get("persona")
        return cls(
            str(payload["answer"]),
            str(payload["trigger"]),
            tuple(str(m) for m in payload.get("messages") or ()),
            None if persona is None else str(persona),
        )


@dataclass(frozen=True, slots=True)
class Answered:
    """The answer a turn ended with, if it can have takes: who gave it, what it posted, what
    it used (summed over the models asked), and whether it ended complete (not stalled,
    stopped, failed or cut short: such a new take is not kept)."""

    persona: str | None
    messages: tuple[DeliveredMessage, ...]
    usage: Usage
    complete: bool = True


def used(usages: Sequence[Usage]) -> Usage:
    return Usage(sum(u.input_tokens for u in usages), sum(u.output_tokens for u in usages))


@dataclass(frozen=True, slots=True)
class Takes:
    """One answer's takes as stored (`take_store.py`)."""

    answer_id: str
    channel_id: str
    guild_id: str | None
    trigger_id: str
    asker_id: str
    persona: str | None
    messages: tuple[str, ...]
    """The messages that show the take on display, in order."""
    shown: int
    count: int
    state: TakeState

    @property
    def counter(self) -> Said:
        """Which take is shown, as the answer says it: "2/3"."""
        return said("button.take.counter", shown=self.shown + 1, count=self.count)

    def ask(self) -> TakeAsk:
        return TakeAsk(self.answer_id, self.trigger_id, self.messages, self.persona)


def may_press(takes: Takes, presser_id: str, can_manage_messages: bool, policy: KillPolicy) -> bool:
    """Whether `presser_id` may regenerate or swipe: the asker, a member who may manage
    messages, or anyone where `/kill` is anyone's (one rule with `/kill`'s)."""
    return presser_id == takes.asker_id or can_manage_messages or policy is KillPolicy.ANYONE


def refusal(takes: Takes | None, swipes_on: bool, went_on: bool = False) -> PressRefusal | None:
    """Why no press of these takes is taken now, whoever presses; None if one may be.
    `went_on`: a message came after the answer, whose freeze may not have landed yet."""
    if takes is None:
        return PressRefusal.GONE
    if takes.state is TakeState.FROZEN or went_on:
        return PressRefusal.FROZEN
    if not swipes_on:
        return PressRefusal.SWIPES_OFF
    if takes.state is TakeState.MAKING:
        return PressRefusal.MAKING
    return None


def not_begun(now: Takes | None, most: int | None = None) -> PressRefusal:
    """Why a press that found the takes open could not begin its take or swipe: what they
    are now (gone, frozen by a message meanwhile, or, `most` given for Regenerate, keeping as
    many takes as they may), else another press's take being written."""
    if now is None:
        return PressRefusal.GONE
    if now.state is TakeState.FROZEN:
        return PressRefusal.FROZEN
    if most is not None and not regenerable(now, most):
        return PressRefusal.ENOUGH
    return PressRefusal.MAKING


def held(refusal: Refusal, takes: Takes, presser_id: str) -> Text:
    """Why Regenerate asks no model now, as its presser is told: a new take counts against
    its asker, so the limit that holds it is the asker's, told to the asker as their own and
    to a moderator naming the asker (never as if it were the moderator's)."""
    key = ASKERS_LIMITS.get(refusal.limit)
    notice = refusal.notice
    if key is None or presser_id == takes.asker_id:
        return notice.description if notice.words is None else notice.words[1]
    return said(key, asker=takes.asker_id, at=math.ceil(refusal.retry_at))


def regenerable(takes: Takes, most: int) -> bool:
    """Whether Regenerate may make another take: an answer keeps at most `most`, so one
    asker cannot ask its models again without end, nor the store keep their every text."""
    return takes.count < most


def swiped(takes: Takes, press: Press) -> int | None:
    """The take ◀ or ▶ shows next; None past either end."""
    step = {Press.PREVIOUS: -1, Press.NEXT: 1}.get(press)
    if step is None:
        return None
    index = takes.shown + step
    return index if 0 <= index < takes.count else None


@dataclass(frozen=True, slots=True)
class Layout:
    """How an answer's messages come to show a take: the messages kept (each edited to the
    take's part at its place), how many more are posted after them, and those deleted."""

    kept: tuple[str, ...]
    more: tuple[str, ...]
    """The parts posted after the kept messages, in order."""
    deleted: tuple[str, ...]


def layout(messages: Sequence[str], parts: Sequence[str]) -> Layout:
    """The answer's `messages` showing `parts` (see the module docstring): in place, then
    more after them, or fewer (the rest deleted)."""
    kept = tuple(messages[: len(parts)])
    return Layout(kept, tuple(parts[len(kept) :]), tuple(messages[len(parts) :]))
