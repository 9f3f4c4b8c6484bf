"""What one provider pass returns to the tool loop."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from tomori.locks.vocabulary import KillReason
from tomori.providers.base import Finish, ProviderError, StreamRequest, ToolCall, Usage


class StreamStatus(StrEnum):
    COMPLETED = "completed"
    FUNCTION_CALL = "function_call"
    TIMEOUT = "timeout"
    STOPPED_BY_USER = "stopped_by_user"
    ERROR = "error"
    EMPTY_RESPONSE = "empty_response"
    OUT_OF_TOKENS = "out_of_tokens"
    """A loop's ending, never a pass's: the turn's daily tokens ran out between its passes
    (`TurnState.budget`)."""


class TimeoutPhase(StrEnum):
    """Whether the provider had sent anything before it went quiet."""

    FIRST_TOKEN = "first_token"
    IDLE = "idle"


@dataclass(frozen=True, slots=True)
class TimedOut:
    """`StreamResult.data` of a `timeout`: which budget ran out and what ended the pass."""

    phase: TimeoutPhase
    reason: KillReason


StreamData = Finish | tuple[ToolCall, ...] | ProviderError | TimedOut | None


@dataclass(frozen=True, slots=True)
class StreamResult:
    """How a pass ended and what it left behind.

    `text` is exactly what reached the channel in this pass (the fallback continues from it);
    `details` are reasoning bodies captured and never posted; `sprites` the images the pass
    posted; `data` the tool calls (`function_call`), the `ProviderError` (`error`), the `Finish`
    (`completed`, `empty_response`) or `TimedOut` (`timeout`).
    """

    status: StreamStatus
    text: str = ""
    details: str = ""
    sprites: tuple[str, ...] = ()
    usage: Usage | None = None
    data: StreamData = None

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The calls a `function_call` pass asks for; none for any other ending."""
        return self.data if isinstance(self.data, tuple) else ()

    @property
    def error(self) -> ProviderError | None:
        """The provider's failure, for an `error` pass."""
        return self.data if isinstance(self.data, ProviderError) else None

    @property
    def timed_out(self) -> TimedOut | None:
        """Which budget ran out, for a `timeout` pass."""
        return self.data if isinstance(self.data, TimedOut) else None


@dataclass(frozen=True, slots=True)
class TurnUsage:
    """The tokens one model used in one turn, summed over its passes, as its provider said."""

    channel_id: str
    requester_id: str | None
    message_id: str | None
    """The message the turn answered."""
    model: str
    """provider:model, as `TOMORI_MODELS` names it."""
    input_tokens: int
    output_tokens: int
    guild_id: str | None = None
    """The server the turn was in (`policy.limit_store.DIRECT_MESSAGES` for a DM): what a quota and
    `/tomori status` count."""


STOPPED_FOR_FOLLOW_UP = "follow_up"
"""The outcome of a part stopped because its user sent a follow-up (not a /kill)."""


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How one model's part in one turn ended (`model` None: the turn ended before any model
    was asked), for `/tomori status`."""

    guild_id: str | None
    channel_id: str
    model: str | None
    outcome: str
    """A `StreamStatus` value (completed, timeout, error, empty_response, stopped_by_user), or
    `STOPPED_FOR_FOLLOW_UP`."""
    phase: str | None = None
    """A timeout's `TimeoutPhase`: first_token or idle."""
    fallback: bool = False
    """Whether it answered after an earlier model of the chain failed."""


CHARACTERS_PER_TOKEN = 4
"""The usual English average; what a reply is counted as when its provider reports no usage."""


def estimated_tokens(characters: int) -> int:
    """Tokens for text of this length, for a provider that reported none: never 0 for text."""
    return math.ceil(characters / CHARACTERS_PER_TOKEN)


def request_characters(request: StreamRequest) -> int:
    """The characters of a request's text, for a usage its provider did not report."""
    return sum(len(item.text) for item in (*request.context, *request.request_notices))


def pass_usage(result: StreamResult, sent_characters: int) -> Usage | None:
    """The tokens one pass used: as its provider reported them, else estimated for a pass that
    answered (the request it was sent in, `sent_characters` long, and what it wrote out); a
    pass that neither reported nor answered (a stall, a refusal) counts for none."""
    wrote = len(result.text) + len(result.details)
    if result.usage is None and (wrote or result.status is StreamStatus.FUNCTION_CALL):
        return Usage(estimated_tokens(sent_characters), estimated_tokens(wrote))
    return result.usage
