"""`run_chain`: the models of `TOMORI_MODELS` tried in order until one answers.

While a later model is still pending, the current attempt's user-facing errors are held back
(the user would otherwise see an error and then a good reply). `timeout`, `error` and
`empty_response` move on to the next model, which continues from the text already in the
channel: it is sent as the assistant's partial answer with a request-only notice to go on
without repeating it (after an empty answer there is none, so the request is the same).
A model is sent the turn's images only if its entry says `+vision` (see `vision`); a failure
that a second try may mend (images refused, a short rate limit, a one-off 5xx or reset) is
tried once more (`attempt`).
A turn's prefill is sent to each model its own way (`prompt.prefill.prefilled`: natively, as
an instruction, or not at all) until the answer has begun with it; a fallback after that goes
on from the text already shown, which begins with it.
`completed`, `stopped_by_user` and `out_of_tokens` (the turn's tokens ran out; the turn says
so) end the chain, and so do a tool loop that gave up (its tools would fail any model the same
way), a channel that is gone or forbidden, and a provider that refused the content (a content
filter): the next model might answer what it refused, so the turn ends with the provider's
reason told (`refused_by_provider`), never on a silent turn. When all fail, the
last attempt says what the user is told, once, and never on a silent turn: a timeout notice
(the last pass posts it itself), the error notice, or the "Empty Response" notice when the
last model too answered nothing, or the "Message Too Long" notice when it refused the request
as too long for its context with nothing left to cut; earlier attempts' timeout notices stay
stashed and are dropped. The tokens each model's provider reported are recorded with the turn,
however it ended, and so is how each model's part ended (for `/tomori status`); a pass that answered
but whose provider reported none is counted by its characters (`results.pass_usage`: the
request it was sent in, what it wrote out), so a quota still holds on a server that never
reports usage. Each model skipped or tried, and how its part ended, is reported to the
turn's account of its message too ("Why no answer?", `TurnState.account`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tomori.config.models import ModelEntry
from tomori.delivery.notices import (
    EMPTY_RESPONSE,
    GENERATION_ERROR,
    KEY_REFUSED,
    RATE_LIMITED,
    TOO_LONG,
    Notice,
    fallback_used,
    refused_by_provider,
)
from tomori.delivery.port import DestinationUnreachable
from tomori.generation.attempt import attempt_model, detail
from tomori.generation.health import ModelHealth, judged
from tomori.generation.results import (
    STOPPED_FOR_FOLLOW_UP,
    StreamStatus,
    TurnOutcome,
    TurnUsage,
    pass_usage,
    request_characters,
)
from tomori.generation.state import TurnState
from tomori.generation.tool_loop import LoopResult, TurnEnvironment
from tomori.locks import KillReason, TurnGuard
from tomori.prompt.prefill import prefilled, reaches
from tomori.prompt.vision import shown_to
from tomori.providers.base import (
    ContextItem,
    Provider,
    ProviderError,
    ProviderErrorKind,
    Role,
    StreamRequest,
    Usage,
)
from tomori.providers.errors import overflow
from tomori.turn_log import note_model

log = logging.getLogger(__name__)

CONTINUE_NOTICE = (
    "Your previous reply was cut off after the text above, which the user has already seen. "
    "Continue exactly where it stops, without repeating any of it."
)
RETRYABLE = frozenset({StreamStatus.TIMEOUT, StreamStatus.ERROR, StreamStatus.EMPTY_RESPONSE})

FINAL_NOTICES = {StreamStatus.ERROR: GENERATION_ERROR, StreamStatus.EMPTY_RESPONSE: EMPTY_RESPONSE}
"""What a direct trigger is told when the last model too ended so (a timeout tells itself)..."""
ERROR_NOTICES = {
    ProviderErrorKind.RATE_LIMITED: RATE_LIMITED,
    ProviderErrorKind.AUTHENTICATION: KEY_REFUSED,
}
"""...or, for these provider errors, what is more use to the asker than "an issue"; and for a
refusal of the request as too long for the model's context, `TOO_LONG` (`final_notice`)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    model: ModelEntry
    result: LoopResult
    sent_chars: int = 0
    """The characters of the request it was sent, for a usage its provider did not report."""


@dataclass(frozen=True, slots=True)
class ChainResult:
    status: StreamStatus
    attempts: tuple[Attempt, ...]
    unreachable: bool = False
    forbidden: bool = False
    """Unreachable because Discord refused the post (403), not because the channel is gone."""

    @property
    def text(self) -> str:
        return "".join(attempt.result.text for attempt in self.attempts)

    def usage(self) -> dict[str, Usage]:
        """The tokens each model used, by label, summed over its passes (`pass_usage`)."""
        used: dict[str, Usage] = {}
        for attempt in self.attempts:
            for result in attempt.result.passes:
                spent = pass_usage(result, attempt.sent_chars)
                if spent is not None:
                    so_far = used.get(attempt.model.label, Usage())
                    used[attempt.model.label] = Usage(
                        so_far.input_tokens + spent.input_tokens,
                        so_far.output_tokens + spent.output_tokens,
                    )
        return used


async def run_chain(
    chain: Sequence[ModelEntry],
    providers: Mapping[str, Provider],
    request: StreamRequest,
    env: TurnEnvironment,
    health: ModelHealth | None = None,
) -> ChainResult:
    """Run the turn over the model chain, then record what it used; see the module docstring.

    With `health`, a model it says is sick is skipped, unless it is the last of the chain, and
    each model asked is judged by how its part ended (`generation.health`)."""
    result = await _try_models(chain, providers, request, env, health)
    if result.status not in (StreamStatus.COMPLETED, StreamStatus.STOPPED_BY_USER):
        env.state.failed = True
    metrics = env.state.metrics
    if metrics is not None:
        for model, usage in result.usage().items():
            metrics.record_usage(
                TurnUsage(
                    channel_id=env.state.channel_id,
                    requester_id=env.requester_id,
                    message_id=env.state.trigger_message_id,
                    model=model,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    guild_id=env.state.guild_id,
                )
            )
        for outcome in outcomes(result, env.state, env.guard.stop_reason()):
            metrics.record_outcome(outcome)
    return result


def outcomes(
    result: ChainResult, state: TurnState, stop_reason: KillReason | None = None
) -> list[TurnOutcome]:
    """How each model's part in the turn ended: a timeout with its phase, whether a model
    that answered did so as a fallback, and a stop for a follow-up told from a /kill."""

    def outcome(status: StreamStatus) -> str:
        stopped = status is StreamStatus.STOPPED_BY_USER
        return STOPPED_FOR_FOLLOW_UP if stopped and stop_reason is KillReason.FOLLOW_UP else status

    if not result.attempts:  # it failed before the first model's attempt was done
        return [TurnOutcome(state.guild_id, state.channel_id, None, outcome(result.status))]
    found = []
    for index, attempt in enumerate(result.attempts):
        loop = attempt.result
        timed_out = loop.last.timed_out if loop.last is not None else None
        found.append(
            TurnOutcome(
                guild_id=state.guild_id,
                channel_id=state.channel_id,
                model=attempt.model.label,
                outcome=outcome(loop.status),
                phase=None if timed_out is None else str(timed_out.phase),
                fallback=index > 0 and loop.status is StreamStatus.COMPLETED,
            )
        )
    return found


async def _try_models(
    chain: Sequence[ModelEntry],
    providers: Mapping[str, Provider],
    request: StreamRequest,
    env: TurnEnvironment,
    health: ModelHealth | None,
) -> ChainResult:
    state, guard, surface_errors = env.state, env.guard, env.surface_errors
    attempts: list[Attempt] = []
    history = request.tool_history  # tools already run stay run: a fallback gets their results
    try:
        for index, model in enumerate(chain):
            fallback_pending = index < len(chain) - 1
            sick = health.sick(model.label) if health is not None else None
            if sick is not None and fallback_pending:
                log.info(
                    "skipping model %s in channel %s: it %s (a probe decides when it is "
                    "trusted again)",
                    model.label,
                    state.channel_id,
                    sick.ailment,
                )
                if state.account is not None:
                    state.account.skipped(model.label)
                continue
            state.suppress_user_errors = fallback_pending or not surface_errors
            note_model(model.label)
            provider = providers[model.provider]
            sent = shown_to(
                _continuing(replace(request, model=model.model, tool_history=history), attempts),
                sees_images=model.vision,
            )
            sent, attempt_env = _with_prefill(sent, env, model)
            loop = await attempt_model(model, provider, sent, attempt_env)
            if attempt_env is not env and loop.text and env.opening is not None:
                env.opening.begun = True  # it began without the prefill: none goes before it
            history = loop.tool_history
            attempts.append(Attempt(model, loop, request_characters(sent)))
            if state.account is not None:
                state.account.tried(model.label, loop.status, loop.last)
            if health is not None:
                health.attempted(model.label, *judged(loop.status, loop.last))
            if (refusal := _refusal(loop)) is not None:
                log.warning(
                    "model %s refused the turn in channel %s%s; no other model is asked",
                    model.label,
                    state.channel_id,
                    detail(loop),
                )
                if surface_errors:
                    await state.post_notice(refused_by_provider(refusal.reason))
                return ChainResult(loop.status, tuple(attempts))
            if loop.status not in RETRYABLE or loop.gave_up:
                if len(attempts) > 1 and loop.status is StreamStatus.COMPLETED:
                    await _fallback_answered(attempts, state, guard, surface_errors)
                return ChainResult(loop.status, tuple(attempts))
            log.warning("model %s ended with %s%s", model.label, loop.status, detail(loop))
            if loop.status is StreamStatus.EMPTY_RESPONSE and state.metrics is not None:
                state.metrics.record("empty_response", model.label)
    except DestinationUnreachable as error:
        log.warning("channel %s is unreachable; the turn ends", state.channel_id)
        return ChainResult(
            StreamStatus.ERROR, tuple(attempts), unreachable=True, forbidden=error.forbidden
        )
    except Exception:
        log.exception("the turn in channel %s failed", state.channel_id)
        if surface_errors:
            await state.post_notice(GENERATION_ERROR)
        return ChainResult(StreamStatus.ERROR, tuple(attempts))
    # Every model failed. The last attempt ran with errors surfaced (unless the turn is
    # silent), so stream_once already posted a timeout notice itself; the rest are ours.
    last = attempts[-1].result
    notice = final_notice(last)
    if surface_errors and notice is not None:
        await state.post_notice(notice)
    return ChainResult(last.status, tuple(attempts))


def final_notice(last: LoopResult) -> Notice | None:
    """What the asker is told when `last`, the chain's last attempt, failed too."""
    notice = FINAL_NOTICES.get(last.status)
    failure = last.last.error if last.last is not None else None
    if failure is None:
        return notice
    if overflow(failure) is not None:  # the attempt cut all it could (`attempt_model`)
        return TOO_LONG
    return ERROR_NOTICES.get(failure.kind, notice)


async def _fallback_answered(
    attempts: list[Attempt], state: TurnState, guard: TurnGuard, surface_errors: bool
) -> None:
    answered_by = attempts[-1].model.label
    if state.metrics is not None:
        state.metrics.record("fallback_used", answered_by)
    if surface_errors and not guard.stop_requested():
        failed = [attempt.model.label for attempt in attempts[:-1]]
        await state.post_notice(fallback_used(answered_by, failed))


def _refusal(loop: LoopResult) -> ProviderError | None:
    """The provider's refusal of the content, if that is how the model's part ended."""
    error = loop.last.error if loop.last is not None else None
    return error if error is not None and error.kind is ProviderErrorKind.CONTENT_BLOCKED else None


def _with_prefill(
    request: StreamRequest, env: TurnEnvironment, model: ModelEntry
) -> tuple[StreamRequest, TurnEnvironment]:
    """The request `model` is sent, with the answer's prefill its way, and the environment
    its attempt runs in: without the prefill where it is dropped for this model, so that the
    text of a model never told of it is posted as it wrote it."""
    opening = env.opening
    if opening is None or opening.begun:  # begun: the text shown stands for it
        return request, env
    native = model.native_prefill
    if reaches(opening.prefill, native=native):
        return prefilled(request, opening.prefill, native=native), env
    log.warning(
        "the server's, channel's or persona's prefill is not sent to model %s in channel %s: "
        "it takes no native prefill (a /respond prefill would reach it as an instruction)",
        model.label,
        env.state.channel_id,
    )
    return request, replace(env, opening=None)


def _continuing(request: StreamRequest, attempts: list[Attempt]) -> StreamRequest:
    """Let a fallback go on from what the failed attempts showed and no tool exchange holds."""
    shown = "".join(attempt.result.passes[-1].text for attempt in attempts if attempt.result.passes)
    if not shown.strip():
        return request
    return replace(
        request,
        context=(*request.context, ContextItem(Role.ASSISTANT, shown, pinned=True)),
        request_notices=(*request.request_notices, ContextItem(Role.USER, CONTINUE_NOTICE)),
    )
