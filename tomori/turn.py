"""`run_generation_turn`: the models of `TOMORI_MODELS` tried in order until one answers.

While a later model is still pending, the current attempt's user-facing errors are held back
(the user would otherwise see an error and then a good reply). `timeout` and `error` move on
to the next model, which continues from the text already in the channel: it is sent as the
assistant's partial answer with a request-only notice to go on without repeating it.
`completed`, `empty_response` and `stopped_by_user` end the chain, and so does a channel that
is gone or forbidden, since every model would fail the same way. When all fail, the timeout
notice (by the last pass itself) or the error notice is posted once, and never on a silent
turn; the timeout notices of earlier attempts stay stashed and are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from tomori.config import Settings
from tomori.context import StreamingContext
from tomori.delivery import DestinationUnreachable, StreamWriter
from tomori.locks import ChannelLocks
from tomori.models import ModelEntry
from tomori.notices import GENERATION_ERROR
from tomori.providers.base import ContextItem, Provider, ProviderError, Role, StreamRequest
from tomori.results import StreamResult, StreamStatus
from tomori.stream_once import post_notice_safely, stream_once

log = logging.getLogger(__name__)

CONTINUE_NOTICE = (
    "Your previous reply was cut off after the text above, which the user has already seen. "
    "Continue exactly where it stops, without repeating any of it."
)
RETRYABLE = frozenset({StreamStatus.TIMEOUT, StreamStatus.ERROR})


class ClosableWriter(StreamWriter, Protocol):
    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Attempt:
    model: ModelEntry
    result: StreamResult


@dataclass(frozen=True, slots=True)
class TurnResult:
    status: StreamStatus
    attempts: tuple[Attempt, ...]
    unreachable: bool = False

    @property
    def text(self) -> str:
        return "".join(attempt.result.text for attempt in self.attempts)


async def run_generation_turn(
    *,
    chain: Sequence[ModelEntry],
    providers: Mapping[str, Provider],
    request: StreamRequest,
    ctx: StreamingContext,
    locks: ChannelLocks,
    settings: Settings,
    open_writer: Callable[[], ClosableWriter],
    surface_errors: bool,
) -> TurnResult:
    """Run the turn over the model chain; see the module docstring for the rules."""
    attempts: list[Attempt] = []
    try:
        for index, model in enumerate(chain):
            fallback_pending = index < len(chain) - 1
            ctx.suppress_user_errors = fallback_pending or not surface_errors
            attempt_request = _continuing(replace(request, model=model.model), ctx)
            writer = open_writer()
            try:
                result = await stream_once(
                    providers[model.provider], attempt_request, writer, ctx, locks, settings
                )
            finally:
                await writer.aclose()
            attempts.append(Attempt(model, result))
            if result.status not in RETRYABLE:
                return TurnResult(result.status, tuple(attempts))
            log.warning("model %s ended with %s%s", model.label, result.status, _detail(result))
    except DestinationUnreachable:
        log.warning("channel %s is unreachable; the turn ends", ctx.channel_id)
        return TurnResult(StreamStatus.ERROR, tuple(attempts), unreachable=True)
    except Exception:
        log.exception("the turn in channel %s failed", ctx.channel_id)
        if surface_errors:
            await post_notice_safely(ctx, GENERATION_ERROR)
        return TurnResult(StreamStatus.ERROR, tuple(attempts))
    # Every model failed. The last attempt ran with errors surfaced (unless the turn is
    # silent), so stream_once already posted a timeout notice itself; an error is ours to post.
    final = attempts[-1].result.status
    if surface_errors and final is StreamStatus.ERROR:
        await post_notice_safely(ctx, GENERATION_ERROR)
    return TurnResult(final, tuple(attempts))


def _continuing(request: StreamRequest, ctx: StreamingContext) -> StreamRequest:
    """Let a fallback go on from what the channel already shows."""
    shown = "".join(message.text for message in ctx.delivered)
    if not shown.strip():
        return request
    return replace(
        request,
        context=(*request.context, ContextItem(Role.ASSISTANT, shown)),
        request_notices=(*request.request_notices, ContextItem(Role.USER, CONTINUE_NOTICE)),
    )


def _detail(result: StreamResult) -> str:
    if isinstance(result.data, ProviderError):
        return f" ({result.data.safe_message})"
    return ""
