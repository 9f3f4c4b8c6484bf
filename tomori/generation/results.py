"""What one provider pass returns to the tool loop."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tomori.providers.base import Finish, ProviderError, ToolCall, Usage


class StreamStatus(StrEnum):
    COMPLETED = "completed"
    FUNCTION_CALL = "function_call"
    TIMEOUT = "timeout"
    STOPPED_BY_USER = "stopped_by_user"
    ERROR = "error"
    EMPTY_RESPONSE = "empty_response"


class TimeoutPhase(StrEnum):
    """Whether the provider had sent anything before it went quiet."""

    FIRST_TOKEN = "first_token"
    IDLE = "idle"


class KillReason(StrEnum):
    """Who ended a pass through its kill callback."""

    TIMER = "timer"
    KILL = "kill"
    STALE = "stale"


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
