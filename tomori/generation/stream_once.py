"""`stream_once`: one provider pass under a rolling inactivity timeout, killable at once.

The pass reads the provider in a task of its own (the generation task) and hands text to the
writer, which sends in its own time. One kill callback ends the pass, with a reason: the timer
(no progress within the budget), `/kill`, or a stale-lock release. Killing cancels the
generation task, which closes the provider's HTTP stream at once, while a Discord send already
on the wire may still finish: on a genuine timeout the pass waits a bounded time for such sends
to land, so the text the fallback continues from is the text the channel really shows.

Once the provider's stream has ended, only delivery remains, and a send still waiting (out a
429, on a slow network) is not the provider being idle: the same timer then bounds delivery
with `TOMORI_DELIVERY_TIMEOUT_MS` instead, re-armed by every send that lands. When that runs
out, what was not sent is dropped with a log line and the pass keeps the provider's outcome;
it is never reported as the provider's timeout. /kill ends that wait at once, as any other.
"""

from __future__ import annotations

import asyncio
import logging
import time
from asyncio import FIRST_COMPLETED
from typing import Any

from tomori.config.settings import Settings, seconds
from tomori.delivery.ceiling import most_read
from tomori.delivery.notices import FIRST_TOKEN_TIMEOUT, IDLE_TIMEOUT
from tomori.delivery.port import StreamWriter
from tomori.generation.pass_timing import BoundedDelivery, KillSwitch, RollingTimer
from tomori.generation.provider_stream import Gathered, generate, partial
from tomori.generation.results import StreamResult, StreamStatus, TimedOut, TimeoutPhase
from tomori.generation.state import TurnState
from tomori.locks import TurnGuard
from tomori.locks.vocabulary import KillReason
from tomori.prompt.opening import Opening
from tomori.prompt.prefill import prepare_request
from tomori.providers.base import (
    Provider,
    StreamRequest,
)

log = logging.getLogger(__name__)


async def stream_once(
    provider: Provider,
    request: StreamRequest,
    writer: StreamWriter,
    state: TurnState,
    guard: TurnGuard,
    settings: Settings,
    opening: Opening | None = None,
) -> StreamResult:
    """Run one provider pass and say how it ended (a `StreamStatus`, see results.py).

    With `opening`, the answer's text is posted beginning with its prefill exactly once
    (`tomori.prompt.opening`).

    Only the inactivity timeout becomes `timeout`; an exception other than a `ProviderError`
    propagates to the generation turn, which posts the generic error notice.
    """
    prepared = prepare_request(request)
    channel_id = state.channel_id
    if guard.stop_requested():
        return StreamResult(StreamStatus.STOPPED_BY_USER)

    kill = KillSwitch()
    gathered = Gathered()
    first_token_s = settings.first_token_budget_s
    if state.first_token_by is not None:  # a retry: what is left of the budget it retries
        first_token_s = min(first_token_s, max(0.0, state.first_token_by - time.monotonic()))
        state.first_token_by = None
    timer = RollingTimer(
        first_token_s,
        seconds(settings.stream_sdk_call_timeout_ms),
        lambda: kill(KillReason.TIMER),
    )

    advance, touch = timer.progress, guard.touch  # looked up once: runs per chunk

    def on_progress() -> None:
        advance()
        touch()

    def delivery_ran_out(finishing: asyncio.Task[None]) -> None:
        if finishing.done():  # it landed in the same loop iteration: nothing ran out
            return
        log.warning(
            "delivery_timeout channel=%s: the provider %s had finished, but no send landed "
            "within %gs; the rest of its answer is dropped",
            channel_id,
            provider.name,
            settings.delivery_budget_s,
            extra={"metric": "delivery_timeout", "provider": provider.name},
        )
        if state.metrics is not None:
            state.metrics.record("delivery_timeout", f"{provider.name}:{request.model}")
        state.undelivered = True
        writer.abandon()
        finishing.cancel()

    def bound_delivery(finishing: asyncio.Task[None]) -> None:
        timer.deliver(settings.delivery_budget_s, lambda: delivery_ran_out(finishing))

    def on_ceiling() -> None:
        if gathered.reading:  # the writer cut the answer while the model goes on
            kill(KillReason.CEILING)

    delivering = BoundedDelivery(writer, bound_delivery)
    guard.set_kill(kill)
    state.on_stream_progress = on_progress
    state.on_ceiling = on_ceiling
    generation = asyncio.create_task(
        generate(
            provider,
            prepared,
            delivering,
            state,
            gathered,
            most_read(settings.max_answer_chars),
            opening.reader() if opening is not None else None,
        ),
        name=f"tomori-generation-{channel_id}",
    )
    kill.generation = generation
    try:
        ended_or_killed: set[asyncio.Future[Any]] = {generation, kill.fired}
        await guard.run_under_watchdog(asyncio.wait(ended_or_killed, return_when=FIRST_COMPLETED))
        if generation.done() and (not generation.cancelled() or kill.reason is None):
            return generation.result()  # (or a cancellation not ours)
        timer.cancel()
        if not generation.done():
            await asyncio.wait({generation})
        if guard.stop_requested():
            writer.abandon()
            return partial(StreamStatus.STOPPED_BY_USER, writer, gathered)
        if kill.reason is KillReason.CEILING:
            return await _finish_cut(delivering, gathered, guard, kill, channel_id)
        phase = TimeoutPhase.IDLE if timer.saw_progress else TimeoutPhase.FIRST_TOKEN
        reason = kill.reason
        assert reason is not None  # the generation was cancelled by the kill
        log.warning(
            "stream_sdk_timeout provider=%s phase=%s reason=%s channel=%s",
            provider.name,
            phase,
            reason,
            channel_id,
            extra={
                "metric": "stream_sdk_timeout",
                "provider": provider.name,
                "phase": str(phase),
                "reason": str(reason),
            },
        )
        if state.metrics is not None:
            state.metrics.record("stream_sdk_timeout", f"{provider.name}:{request.model}")
        kill.rearm()  # from here on, a further kill (a /kill) ends the settle wait
        await guard.run_under_watchdog(
            settle_abandoned_stream(
                writer, seconds(settings.stream_abandoned_settle_timeout_ms), kill.fired
            )
        )
        if guard.stop_requested():
            writer.abandon()
            return partial(StreamStatus.STOPPED_BY_USER, writer, gathered)
        notice = IDLE_TIMEOUT if phase is TimeoutPhase.IDLE else FIRST_TOKEN_TIMEOUT
        if not state.suppress_user_errors:  # else a fallback is pending: it speaks for the turn
            await state.post_notice(notice)
        return partial(StreamStatus.TIMEOUT, writer, gathered, TimedOut(phase, reason))
    finally:
        timer.cancel()
        state.on_stream_progress = state.on_ceiling = None
        guard.clear_kill(kill)
        if not generation.done():
            generation.cancel()
            await asyncio.gather(generation, return_exceptions=True)


async def _finish_cut(
    writer: StreamWriter,
    gathered: Gathered,
    guard: TurnGuard,
    kill: KillSwitch,
    channel_id: str,
) -> StreamResult:
    """The writer cut the answer at its ceiling and the pass stopped reading the model: the
    answer is delivered to its note, as a cut seen at a chunk is, and /kill still ends it."""
    log.warning("answer in channel %s cut at its message ceiling", channel_id)
    kill.rearm()  # a /kill from here on ends the delivery
    finishing = asyncio.ensure_future(writer.finish())
    try:
        await guard.run_under_watchdog(
            asyncio.wait({finishing, kill.fired}, return_when=FIRST_COMPLETED)
        )
    finally:
        if not finishing.done():
            finishing.cancel()
        await asyncio.gather(finishing, return_exceptions=True)
    if guard.stop_requested():
        writer.abandon()
        return partial(StreamStatus.STOPPED_BY_USER, writer, gathered)
    return partial(StreamStatus.COMPLETED, writer, gathered, gathered.finish)


async def settle_abandoned_stream(
    writer: StreamWriter, budget_s: float, interrupt: asyncio.Future[None] | None = None
) -> bool:
    """Wait at most `budget_s` for the abandoned pass's text to settle; True if it all landed.

    The complete lines the model wrote before it stalled, and a send already on the wire, must
    be counted in the text the fallback continues from, or they land later as orphaned
    messages (`StreamWriter.settle`). The wait is bounded so a hung send cannot hold the
    fallback back, and a further kill ends it at once: what has not landed then is dropped.
    """
    if budget_s <= 0:
        writer.abandon()
        return False
    settling = asyncio.create_task(writer.settle())
    waiters: set[asyncio.Future[None]] = {settling}
    if interrupt is not None:
        waiters.add(interrupt)
    try:
        await asyncio.wait(waiters, timeout=budget_s, return_when=FIRST_COMPLETED)
        return settling.done() and not settling.cancelled() and settling.exception() is None
    finally:
        if not settling.done():
            writer.abandon()  # what is not on the wire yet is not sent any more
        settling.cancel()
        await asyncio.gather(settling, return_exceptions=True)
