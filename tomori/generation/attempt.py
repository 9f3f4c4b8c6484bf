"""One model's attempt at a turn: its tool loop, and the one second try a failure may earn.

The model is sent the request fitted to its context budget (`contexts.ContextBook`), each pass
of its tool loop fitted to the same room (a tool result that does not fit is cut), and
what its server says the request came to teaches the budget how it counts. A refusal of the
request as too long for the model's context is asked once more, fitted tighter (to the size
the refusal named, or a smaller share), before the next model is; unless the tighter fit is the
very request refused (nothing is left to cut but what is always sent: the message answered is
too long), which is never sent twice.
A model whose provider refuses the turn's images with a bad request that names them is asked
once more without them (see `prompt.vision`). A model whose provider rate limits the request
and says how long to wait (`Retry-After`) is waited for once, and asked once more, when the wait
is short next to the idle budget (`rate_limit_wait_s`); a longer one moves on to the next model
at once, as does a 429 that says nothing. A failure that is likely a one-off (a 5xx, a reset
or dropped connection, a stream cut short: `one_off`) is asked again at once, within what is
left of the first-token budget counted from when the model was asked, so a one-off costs the
user no more than a stall would, and neither the turn nor the model's health. Any second try
happens only before the model has shown anything. The wait is work /kill stops at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace

from tomori.config.models import ModelEntry
from tomori.config.settings import Settings, seconds
from tomori.generation.results import StreamStatus
from tomori.generation.stoppable import Stopped, until_stopped
from tomori.generation.tool_loop import LoopResult, TurnEnvironment, run_tool_loop
from tomori.prompt.vision import image_count, without_images
from tomori.providers.base import Provider, ProviderError, ProviderErrorKind, StreamRequest
from tomori.providers.errors import refuses_images

log = logging.getLogger(__name__)

RATE_LIMIT_WAIT_SHARE = 0.25
"""A provider's Retry-After is waited out when it is at most this share of the idle budget."""
RATE_LIMIT_WAIT_MAX_S = 20.0
"""...and never longer than this: past it, the next model answers sooner."""


def rate_limit_wait_s(settings: Settings) -> float:
    """The longest Retry-After that is waited out rather than handed to the next model."""
    idle_s = seconds(settings.stream_sdk_call_timeout_ms)
    return min(RATE_LIMIT_WAIT_MAX_S, idle_s * RATE_LIMIT_WAIT_SHARE)


async def attempt_model(
    model: ModelEntry, provider: Provider, sent: StreamRequest, env: TurnEnvironment
) -> LoopResult:
    """Run the model's tool loop on `sent` fitted to its budget, and once more if its
    failure says it may help."""
    asked_at = time.monotonic()
    sent = replace(sent, tools=env.tools.specs())  # what the loop offers counts in the fit
    fit = env.contexts.fitted(model, sent)
    each_pass = env.contexts.fitting(model, fit.room)
    loop = await run_tool_loop(provider, fit.request, env, each_pass)
    if loop.passes:
        env.contexts.observed(model, fit.request, loop.passes[0].usage)
    error = loop.last.error if loop.last is not None else None
    if error is None or loop.text:
        return loop
    tighter = env.contexts.tighter(model, sent, fit, error)
    if tighter is not None and tighter.request == fit.request:
        log.warning(
            "model %s refused a request of about %d tokens as too long%s, and nothing of it is"
            " left to cut: the message answered does not fit its context",
            model.label,
            fit.tokens,
            detail(loop),
        )
        return loop
    if tighter is not None:
        log.warning(
            "model %s refused a request of about %d tokens as too long%s; once more with about %d",
            model.label,
            fit.tokens,
            detail(loop),
            tighter.tokens,
        )
        again = await run_tool_loop(
            provider,
            replace(tighter.request, tool_history=loop.tool_history),
            env,
            env.contexts.fitting(model, tighter.room),
        )
        if again.passes:
            env.contexts.observed(model, tighter.request, again.passes[0].usage)
        return replace(again, passes=(*loop.passes, *again.passes))
    sent = fit.request
    if refuses_images(error) and image_count(sent):
        log.warning("model %s refused the images%s; once more without", model.label, detail(loop))
        again = await run_tool_loop(
            provider, replace(without_images(sent), tool_history=loop.tool_history), env, each_pass
        )
        return replace(again, passes=(*loop.passes, *again.passes))
    first_token_by = asked_at + env.settings.first_token_budget_s
    if one_off(error) and time.monotonic() < first_token_by:
        log.warning(
            "model %s failed before showing anything%s; asking it once more",
            model.label,
            detail(loop),
        )
        env.state.first_token_by = first_token_by
        try:
            again = await run_tool_loop(
                provider, replace(sent, tool_history=loop.tool_history), env, each_pass
            )
        finally:
            env.state.first_token_by = None
        return replace(again, passes=(*loop.passes, *again.passes))
    wait_s = _waited_out(error, env.settings)
    if wait_s is None:
        return loop
    log.warning(
        "model %s is rate limited; waiting its Retry-After of %gs, then asking once more",
        model.label,
        wait_s,
    )
    try:
        await until_stopped(
            env.guard, asyncio.sleep(wait_s), watched=True, name="tomori-retry-after"
        )
    except Stopped:
        return replace(loop, status=StreamStatus.STOPPED_BY_USER)
    again = await run_tool_loop(
        provider, replace(sent, tool_history=loop.tool_history), env, each_pass
    )
    return replace(again, passes=(*loop.passes, *again.passes))


def one_off(error: ProviderError) -> bool:
    """Whether a second try at once may well not meet the failure: a 5xx, a reset or dropped
    connection, a stream cut short. Not a refused key or a bad request, nor a 200 that could
    not be read (a proxy's login page, a server that ignores streaming): those come again."""
    if error.kind is ProviderErrorKind.SERVER_ERROR:
        return error.status is not None
    return error.kind in (ProviderErrorKind.CONNECTION, ProviderErrorKind.CUT_SHORT)


def _waited_out(error: ProviderError, settings: Settings) -> float | None:
    """How long to wait for a rate-limited provider, or None to move on to the next model."""
    if error.kind is not ProviderErrorKind.RATE_LIMITED or error.retry_after_s is None:
        return None
    return error.retry_after_s if error.retry_after_s <= rate_limit_wait_s(settings) else None


def detail(loop: LoopResult) -> str:
    """Our words for a provider failure and, for the operator, the provider's own (sanitised)."""
    error = loop.last.error if loop.last is not None else None
    if error is None:
        return ""
    said = f"; the provider said: {error.detail}" if error.detail else ""
    return f" ({error.safe_message}{said})"
