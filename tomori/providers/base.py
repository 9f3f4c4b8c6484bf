"""The provider protocol: what a model backend is asked and what it yields.

A provider knows nothing of Discord or of time. It turns one request into an async stream of
events and closes its HTTP stream when the consuming task is cancelled; `stream_once` owns every
timeout and stops a provider only by cancelling the task that reads it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from tomori.errors import TomoriError

JsonObject = Mapping[str, Any]


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True)
class Image:
    """An image as the model is sent it: its bytes and its own content type (`image/png`).

    Bytes, not a URL: a local server cannot fetch Discord's CDN, and its signed URLs expire.
    The bytes are left out of `repr` so that a logged request never dumps megabytes.
    """

    data: bytes = field(repr=False)
    content_type: str

    def __repr__(self) -> str:
        return f"Image({self.content_type}, {len(self.data)} bytes)"


TOOL_IMAGES = "The images the tool {tool} returned:"
"""What a provider that cannot put images in a tool's result says before them."""


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One turn of the conversation as the model sees it.

    `pinned`, `files_at` and `note` are read by the request budget alone
    (`tomori.prompt.budget`), and left out of comparisons: they say how an item may be
    fitted, not what it says."""

    role: Role
    text: str
    images: tuple[Image, ...] = ()
    pinned: bool = field(default=False, compare=False)
    """Always sent whole: the turn's own (its trigger, the chain it replies to, what a
    /respond said, a prefill, a partial answer a fallback goes on from). System items and
    request notices are kept whatever this says."""
    files_at: int | None = field(default=None, compare=False)
    """Where the text of its message's attachments begins in `text`: the budget cuts that
    before it leaves out whole messages."""
    note: bool = field(default=False, compare=False)
    """A note of the bot's (its memories, the channel's summary): its first line a header,
    each further line less needed than the one before; the budget cuts it to its share of a
    small model's room (`tomori.prompt.budget.NOTE_SHARE`)."""


class ArgumentsProblem(StrEnum):
    """Why a tool call's arguments cannot be used: the call is never run, and the model is told
    which, so it can issue the call again."""

    CUT_OFF = "cut_off"
    """The stream ended inside the JSON (most often the model's output-token limit)."""
    NOT_JSON = "not_json"
    """The arguments are complete, but not JSON."""
    NOT_AN_OBJECT = "not_an_object"
    """Valid JSON, but not the object of named arguments a tool takes."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call as the model asked for it.

    `problem` says why its arguments cannot be used, if they cannot: such a call is never
    executed, and the model is asked to issue it again.
    """

    id: str
    name: str
    arguments: JsonObject
    raw_arguments: str = ""
    problem: ArgumentsProblem | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    """What the provider needs echoed back with the call (Gemini's thought signature)."""


@dataclass(frozen=True, slots=True)
class ToolExchange:
    """One earlier iteration of the tool loop: the call, its result, and the text before it.

    `pre_tool_text` is the visible text the model wrote in that iteration before calling the
    tool; providers join its parts with no separator so the model does not repeat it.
    """

    call: ToolCall
    result: JsonObject
    pre_tool_text: tuple[str, ...] = ()
    images: tuple[Image, ...] = ()
    """Images the tool returned, sent to a model that sees images after the result (an MCP
    server's screenshot, a chart)."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: its name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: JsonObject


@dataclass(frozen=True, slots=True)
class StreamRequest:
    """Everything one provider pass needs; built fresh per pass and never mutated."""

    model: str
    context: tuple[ContextItem, ...]
    tool_history: tuple[ToolExchange, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    output_prefill: str | None = None
    request_notices: tuple[ContextItem, ...] = ()
    max_output_tokens: int | None = None
    """The most tokens the pass may write; None leaves it to the provider (sends nothing)."""
    temperature: float | None = None
    """The sampling temperature; None leaves it to the provider (sends nothing)."""
    sees_images: bool = True
    """Whether the model is sent images; False once `without_images` took them out, so the
    tool loop names a tool's images instead of sending them."""


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Visible text for the channel."""

    text: str


@dataclass(frozen=True, slots=True)
class DetailsDelta:
    """Reasoning or thinking text: captured for the turn, never posted."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    call: ToolCall


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class UsageEvent:
    usage: Usage


@dataclass(frozen=True, slots=True)
class Finish:
    """The provider's own word on why it stopped (`stop`, `length`, `tool_calls`, ...)."""

    reason: str | None = None


ProviderEvent = TextDelta | DetailsDelta | ToolCallEvent | UsageEvent | Finish


class ProviderErrorKind(StrEnum):
    """The few kinds of failure the generation turn acts on differently."""

    AUTHENTICATION = "authentication"
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    BAD_REQUEST = "bad_request"
    CONNECTION = "connection"
    CUT_SHORT = "cut_short"
    """The stream ended cleanly but never said the answer was complete (no finish reason, no
    end marker): a proxy cutting it politely. The turn takes it as a dropped connection."""
    CONTENT_BLOCKED = "content_blocked"
    """The provider refused what it was asked or what it wrote (a content filter, a safety
    block): the turn ends saying so, and no other model is asked to answer it instead."""


class ProviderError(TomoriError):
    """A provider failure, already classified.

    `safe_message` may be shown to users and logged: it never holds a key, a URL or an SDK's
    own exception text. `detail` is the provider's own words (the error text of a 400, what
    made a response unreadable), for the operator's log only: already sanitised
    (`providers.errors.sanitised`), never shown to users. `retry_after_s` is the provider's
    Retry-After, where it sent one. `reason` is why a provider refused the content
    (`CONTENT_BLOCKED`), in its own words made fit to show the asker: one short sentence, no
    key, no URL. `code` is the provider's own code for the error, where it gave one
    (`context_length_exceeded`).
    """

    def __init__(
        self,
        kind: ProviderErrorKind,
        safe_message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
        detail: str = "",
        reason: str = "",
        code: str = "",
    ) -> None:
        super().__init__(f"{kind}: {safe_message}")
        self.kind = kind
        self.safe_message = safe_message
        self.status = status
        self.retry_after_s = retry_after_s
        self.detail = detail
        self.reason = reason
        self.code = code


class Provider(Protocol):
    """A model backend. `name` is what metrics and logs call it (`openai`, `gemini`, ...)."""

    @property
    def name(self) -> str: ...

    async def aclose(self) -> None:
        """Release the provider's HTTP client (at unload)."""
        ...

    def stream(self, request: StreamRequest) -> AsyncGenerator[ProviderEvent, None]:
        """Yield the events of one generation; raise `ProviderError` on a provider failure.

        The iterator is closed (`aclose`) or its task cancelled when the pass ends early; it must
        close its HTTP stream then.
        """
        ...
