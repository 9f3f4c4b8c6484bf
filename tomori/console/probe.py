"""Ask one model of the chain for a tiny streamed answer, and say how it went in one line.

The request goes through the real provider and `stream_once`, with the configured timeouts
and the tools it is given (`--check` gives every tool a turn may offer: the built-in ones
`TOMORI_TOOLS` names and the MCP servers'), so a model that cannot serve the bot fails here as
it would in a channel: a refused connection, a refused key, an unknown model, a model that takes
no tools or not that many, a first token that does not come in time, a stream that ends
without its finish reason or `[DONE]` (a proxy that cuts streams). What is said of a failure
is our words and the provider's own, both already free of secrets (`providers.errors.sanitised`).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from tomori.config.models import ModelEntry
from tomori.config.provider_kinds import PROVIDER_KINDS
from tomori.config.settings import Settings, seconds
from tomori.delivery.notices import Notice
from tomori.generation.results import StreamResult, StreamStatus, TimeoutPhase
from tomori.generation.state import TurnState
from tomori.generation.stream_once import stream_once
from tomori.locks import KillCallback, KillReason
from tomori.providers.base import (
    ContextItem,
    Provider,
    ProviderErrorKind,
    Role,
    StreamRequest,
    ToolSpec,
)

T = TypeVar("T")

QUESTION = "Reply with the single word: ready"
SHOWN_TOOLS = 10
"""A refusal names this many of the tools offered, and counts the rest."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    model: ModelEntry
    answered: bool
    first_token_s: float | None
    total_s: float
    why: str = ""
    """Why the model failed, in one line; empty when it answered."""

    @property
    def line(self) -> str:
        if self.answered:
            first = f"{self.first_token_s:.2f} s" if self.first_token_s is not None else "-"
            return f"ok      {self.model.label}: first token {first}, total {self.total_s:.2f} s"
        return f"FAILED  {self.model.label}: {self.why}"


async def probe(
    model: ModelEntry,
    provider: Provider,
    settings: Settings,
    base_url: str | None,
    tools: Sequence[ToolSpec] = (),
) -> ProbeResult:
    """Stream one tiny answer from `model`, offering it `tools`; `base_url` (without
    credentials) names where it was asked, for a connection that failed."""
    writer = _TimingWriter()
    state = TurnState("check", notices=_Quiet(), suppress_user_errors=True)
    request = StreamRequest(  # sent as a channel's turn sends it, sampling settings too
        model.model,
        (ContextItem(Role.USER, QUESTION),),
        tools=tuple(tools),
        max_output_tokens=settings.max_output_tokens,
        temperature=settings.temperature,
    )
    writer.started = time.monotonic()
    try:
        result = await stream_once(provider, request, writer, state, _ProbeGuard(), settings)
    except Exception as error:  # what no provider error covers: named, its text never shown
        total = time.monotonic() - writer.started
        return ProbeResult(model, False, None, total, f"failed: {type(error).__name__}")
    total = time.monotonic() - writer.started
    first = None if writer.first_at is None else writer.first_at - writer.started
    if result.status in (StreamStatus.COMPLETED, StreamStatus.FUNCTION_CALL):
        return ProbeResult(model, True, first, total)
    said = why(result, model, settings, base_url, tools)
    return ProbeResult(model, False, first, total, said)


def why(
    result: StreamResult,
    model: ModelEntry,
    settings: Settings,
    base_url: str | None,
    tools: Sequence[ToolSpec] = (),
) -> str:
    """The reason a probe failed, for the operator: what to look at, and the provider's words."""
    timed_out, error = result.timed_out, result.error
    if timed_out is not None:
        if timed_out.phase is TimeoutPhase.FIRST_TOKEN:
            return (
                f"timed out before the first token (waited {settings.first_token_budget_s:g} s: "
                f"{settings.first_token_budget_source})"
            )
        idle_s = seconds(settings.stream_sdk_call_timeout_ms)
        return (
            f"stalled after it began answering (nothing for {idle_s:g} s: "
            f"STREAM_SDK_CALL_TIMEOUT_MS)"
        )
    if result.status is StreamStatus.EMPTY_RESPONSE:
        return "answered nothing (an empty response)"
    if error is None:
        return f"ended with {result.status}"
    kind = PROVIDER_KINDS[model.provider]
    said = f": the provider said: {error.detail}" if error.detail else ""
    words = error.detail.lower()
    if error.kind is ProviderErrorKind.CUT_SHORT:
        return (
            f"its stream ended with {error.detail} after {len(result.text)} characters: a "
            "proxy between may be cutting its streams short, and every answer would be taken "
            "as cut off"
        )
    if error.kind is ProviderErrorKind.CONNECTION:
        where = base_url or f"the provider's own URL ({kind.base_url_variable} is not set)"
        said_plainly = error.detail or error.safe_message
        if result.text:
            return (
                f"the connection dropped after it began answering ({len(result.text)} "
                f"characters in): {said_plainly}"
            )
        if refused(error):
            return f"connection refused: nothing listens at {where} ({kind.base_url_variable})"
        if not _never_connected(error):
            return f"the connection to {where} closed before any answer: {said_plainly}"
        return f"could not connect to {where}: {said_plainly}"
    if error.status == 401:
        return f"401: the provider refused the key ({kind.key_variable}){said}"
    if error.status == 403:
        return f"403: the key may not use this model ({kind.key_variable}){said}"
    if "model" in words and _says_not_found(words):
        return f"model not found: {model.model!r} (TOMORI_MODELS){said}"
    if error.status == 404:  # a 404 that names no model: most often the address is wrong
        where = base_url or "the provider's own URL"
        return (
            f"404: nothing found at {where} for model {model.model!r}: check "
            f"{kind.base_url_variable} ({kind.base_url_hint}) and TOMORI_MODELS{said}"
        )
    if error.kind is ProviderErrorKind.BAD_REQUEST and tools and _names_tools(words):
        return f"{_tools_refused(words, tools)}{said}"
    return f"{error.safe_message}{said}"


def _tools_refused(words: str, tools: Sequence[ToolSpec]) -> str:
    """A model that refused the tools a turn offers, said with them (an MCP server's are named
    `server__tool`) and what to change."""
    count = f"{len(tools)} tool{'s' * (len(tools) != 1)}"
    shown = ", ".join(tool.name for tool in tools[:SHOWN_TOOLS])
    if len(tools) > SHOWN_TOOLS:
        shown += f" and {len(tools) - SHOWN_TOOLS} more"
    if tools_refused(words):
        what, fix = f"the model takes no tools, and a turn offers it {count} ({shown})", "none"
    else:
        what, fix = f"the model refused the {count} a turn offers ({shown})", "fewer"
    return (
        f"tools refused: {what}, so every turn would fail on it: offer {fix} (TOMORI_TOOLS "
        f"names the built-in ones, the entries of TOMORI_MCP_CONFIG the MCP servers'), or "
        f"choose a model that takes them"
    )


def refused(error: BaseException) -> bool:
    """Whether the connection was refused: an `ECONNREFUSED` anywhere in what caused `error`
    (the SDKs wrap it, and aiohttp's words for it do not say "refused")."""
    return any(
        isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED for cause in _causes(error)
    )


CONNECT_FAILURES = frozenset(
    {"ClientConnectorError", "ConnectError", "ConnectTimeout", "gaierror", "ConnectionRefusedError"}
)
"""The names aiohttp, httpx and the socket module give a connection that was never made (a
host that does not resolve or answer): anything else that failed a connection failed it after
it was made."""


def _never_connected(error: BaseException) -> bool:
    """Whether the connection was never made, judged by what caused `error` (as `refused`)."""
    return any(type(cause).__name__ in CONNECT_FAILURES for cause in _causes(error))


def _causes(error: BaseException) -> list[BaseException]:
    """`error` and every exception that caused it, each once."""
    seen: list[BaseException] = []
    causes = [error]
    while causes:
        cause = causes.pop()
        if any(cause is known for known in seen):
            continue
        seen.append(cause)
        for parent in (cause.__cause__, cause.__context__, getattr(cause, "os_error", None)):
            if isinstance(parent, BaseException):
                causes.append(parent)
    return seen


def _says_not_found(words: str) -> bool:
    return any(phrase in words for phrase in ("not found", "does not exist", "no such model"))


def _names_tools(words: str) -> bool:
    """Whether a bad request's text is about the tools it offered."""
    return "tool" in words or "function" in words


def tools_refused(words: str) -> bool:
    """Whether a bad request's text says the model takes no tools (OpenAI-compatible servers
    say "does not support tools", "tool use is not supported", "function calling ...")."""
    return ("tool" in words or "function" in words) and "support" in words


class _TimingWriter:
    """A `StreamWriter` that keeps nothing but when the first visible text came."""

    def __init__(self) -> None:
        self.started = 0.0
        self.first_at: float | None = None
        self._text: list[str] = []

    def feed(self, text: str) -> None:
        if self.first_at is None and text.strip():
            self.first_at = time.monotonic()
        self._text.append(text)

    def cut(self) -> None:
        return None

    async def finish(self) -> None:
        return None

    async def settle(self) -> None:
        return None

    def abandon(self) -> None:
        return None

    @property
    def delivered_text(self) -> str:
        return "".join(self._text)

    @property
    def sprites(self) -> tuple[str, ...]:
        return ()

    async def aclose(self) -> None:
        return None


class _Quiet:
    """The probe's notice sink: a probe's outcome is its line, not a notice."""

    async def post_notice(self, notice: Notice) -> None:
        return None


class _ProbeGuard:
    """A `TurnGuard` with no lock behind it: nothing can ask a probe to stop."""

    def stop_requested(self) -> bool:
        return False

    def stop_reason(self) -> KillReason | None:
        return None

    def touch(self) -> None:
        return None

    async def run_under_watchdog(self, work: Awaitable[T]) -> T:
        return await work

    def set_kill(self, kill: KillCallback) -> None:
        return None

    def clear_kill(self, kill: KillCallback) -> None:
        return None

    def calling_tools(self) -> None:
        return None

    def cut_short(self, tool: str) -> None:
        return None

    def mark_answered(self) -> None:
        return None
