"""Calls a member confirms: a tool that may change things runs only after its asker says yes.

A tool with a `Confirmation` (an MCP tool its server does not mark read-only, or that the
author's `"confirm"` list names, or a bot's own tool registered so) is offered to the model,
but each call waits for the member the turn answers: the place asks them (`Confirmer`: Discord
with buttons on a message in the channel, the console with a line), showing the tool and its
whole arguments, and runs the call only on their yes. Nobody else may answer; the author may
require a role per server; no answer within `TOMORI_TOOL_CONFIRM_TIMEOUT_MS` refuses; /kill
refuses at once. The model is told plainly what became of its call.

The rules and words live here once; the places only ask and read the press.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from tomori.delivery.unseen import unseen
from tomori.words import Said, said

MAX_SHOWN_ARGUMENTS = 3_800
"""The most characters of arguments a prompt shows: an embed's description holds 4,096, with
room for the lines around them. A call whose arguments are longer is refused unasked: nobody
should allow what they cannot read whole."""

CUSTOM_ID_PREFIX = "tomori:confirm:"
"""The start of a confirmation button's custom id: `tomori:confirm:<ask id>:<allow|refuse>`."""


@dataclass(frozen=True, slots=True)
class Confirmation:
    """A tool's rule: each call is confirmed by the member the turn answers, and in a server
    `roles` names (server ID to role ID), only while they hold that role."""

    roles: Mapping[str, str] = field(default_factory=dict)

    def role_in(self, guild_id: str | None) -> str | None:
        return None if guild_id is None else self.roles.get(guild_id)


def _shown(character: str) -> str:
    """`character` as an argument's JSON shows it: itself, or `\\uXXXX` (the same value) for a
    backtick and anything a reader does not see (`tomori.delivery.unseen`); the layout's own
    line breaks and spaces stay."""
    if character in "\n ":
        return character
    if character == "`" or unseen(character):
        return "".join(f"\\u{unit:04x}" for unit in _utf16(character))
    return character


def _utf16(character: str) -> tuple[int, ...]:
    """The UTF-16 code units JSON writes a character with (two for one past U+FFFF)."""
    data = character.encode("utf-16-be")
    return tuple(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))


class Verdict(StrEnum):
    """What became of a call that needed confirming."""

    ALLOWED = "allowed"
    REFUSED = "refused"
    TIMED_OUT = "timed_out"
    STOPPED = "stopped"
    NO_ROLE = "no_role"
    UNSHOWABLE = "unshowable"
    NOBODY_TO_ASK = "nobody_to_ask"


@dataclass(frozen=True, slots=True)
class ToolAsk:
    """One call waiting for its asker's yes."""

    tool: str
    """The name the model called it by."""
    arguments: Mapping[str, Any]
    requester_id: str | None
    rule: Confirmation
    timeout_s: float

    def shown_arguments(self) -> str | None:
        """The arguments as the prompt shows them: JSON, whole; None if too long to show.

        Backticks are written `\\u0060`, the same JSON value, so nothing in the arguments can
        close the code block they are shown in and pass text off as the prompt's own; so are
        the characters that show nothing or reorder what follows (bidi controls, zero-width
        ones, line separators), so what the asker reads is what runs."""
        text = json.dumps(dict(self.arguments), ensure_ascii=False, indent=1, sort_keys=True)
        text = "".join(_shown(character) for character in text)
        return text if len(text) <= MAX_SHOWN_ARGUMENTS else None

    def prompt(self, mention: str, role: str | None = None) -> Said:
        """What the asker is shown: the tool, its arguments whole, who may answer and until
        when (`mention` and `role`: how the place names the asker and the role needed)."""
        shown = {"tool": self.tool, "mention": mention, "seconds": f"{self.timeout_s:g}"}
        arguments = self.shown_arguments() or ""
        if role:
            return said("confirm.prompt_role", arguments=arguments, role=role, **shown)
        return said("confirm.prompt", arguments=arguments, **shown)

    def settled(self, verdict: Verdict, mention: str) -> Said:
        """What the prompt says once answered."""
        tool = self.tool
        if verdict in (Verdict.ALLOWED, Verdict.REFUSED):
            return said(f"confirm.{verdict.value}", mention=mention, tool=tool)
        if verdict is Verdict.TIMED_OUT:
            return said("confirm.timed_out", seconds=f"{self.timeout_s:g}", tool=tool)
        if verdict is Verdict.STOPPED:
            return said("confirm.stopped", tool=tool)
        return said("confirm.not_run", tool=tool)


def told_to_model(verdict: Verdict, ask: ToolAsk) -> str:
    """Why the call did not run, as the model is told (a tool failure's reason)."""
    return {
        Verdict.REFUSED: "the member refused this call: do not ask for it again in this answer",
        Verdict.TIMED_OUT: f"the member did not confirm this call within {ask.timeout_s:g}s",
        Verdict.STOPPED: "the answer was stopped before the member confirmed this call",
        Verdict.NO_ROLE: "the member lacks the role this tool needs here; it cannot run for them",
        Verdict.UNSHOWABLE: f"its arguments are longer than the {MAX_SHOWN_ARGUMENTS} characters "
        "a member can be shown to confirm them; use shorter arguments",
        Verdict.NOBODY_TO_ASK: "this tool runs only when the member who asked confirms it, "
        "and nobody can be asked here",
    }.get(verdict, "the call was not confirmed")


def before_asking(ask: ToolAsk, guild_id: str | None, asker_roles: Collection[str]) -> Verdict:
    """Whether the asker may be asked at all: a verdict that ends the call unasked, or ALLOWED
    to go on and ask (the role they lack would refuse their press anyway)."""
    if ask.requester_id is None:
        return Verdict.NOBODY_TO_ASK
    if ask.shown_arguments() is None:
        return Verdict.UNSHOWABLE
    role = ask.rule.role_in(guild_id)
    if role is not None and role not in asker_roles:
        return Verdict.NO_ROLE
    return Verdict.ALLOWED


class PressRefusal(StrEnum):
    """Why a press is not taken, as the presser is told (ephemerally): its words' key."""

    NOT_THE_ASKER = "reply.confirm.not_the_asker"
    NO_ROLE = "reply.confirm.no_role"
    NOT_WAITING = "reply.confirm.not_waiting"

    @property
    def words(self) -> Said:
        return said(self.value)


def press_refusal(
    ask: ToolAsk,
    guild_id: str | None,
    presser_id: str,
    presser_roles: Collection[str],
    *,
    allowing: bool,
) -> PressRefusal | None:
    """Why `presser_id`'s press is not taken; None: it answers the call. Only the asker may
    answer; allowing also needs the server's role, refusing never does."""
    if presser_id != ask.requester_id:
        return PressRefusal.NOT_THE_ASKER
    role = ask.rule.role_in(guild_id)
    if allowing and role is not None and role not in presser_roles:
        return PressRefusal.NO_ROLE
    return None


class Confirmer(Protocol):
    """A place that can ask a turn's asker to confirm a call."""

    async def confirm(self, ask: ToolAsk) -> Verdict:
        """Ask, and wait for the answer or `ask.timeout_s`; a cancel (the turn's /kill) ends
        the prompt as stopped before it propagates."""
        ...
