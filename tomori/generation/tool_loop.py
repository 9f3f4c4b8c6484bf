"""`run_tool_loop`: stream, run the tools the model asks for, stream again, until it answers.

Each tool runs under the lock's watchdog (the first-token budget and the tool budget may both
exceed the stale-lock window on purpose), bounded by `TOOL_EXECUTION_TIMEOUT_MS`, and in a task
that `/kill` cancels through the same kill hook a stream uses. A call whose arguments arrived
cut off is never run: a synthetic failure asks the model to issue it again. Each exchange keeps
the text the model wrote before the call, so the next pass does not write it again. Each pass
is fitted to the model's context as the first was (`fit`), so a long tool result is cut rather
than the next pass refused (`tomori.prompt.tool_cuts`). Each pass's
tokens are charged to the turn's budget as it ends, and no pass starts once the budget is spent
(`out_of_tokens`: the turn says so).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from tomori.config.settings import Settings, seconds
from tomori.delivery.notices import STILL_WORKING, THINKING_LOOP, TOOL_ERROR_LOOP
from tomori.delivery.port import StreamWriter
from tomori.delivery.progress import Stage
from tomori.generation.contexts import ContextBook, Fit
from tomori.generation.results import StreamResult, StreamStatus, pass_usage, request_characters
from tomori.generation.state import TurnState
from tomori.generation.stoppable import Stopped, until_stopped
from tomori.generation.stream_once import stream_once
from tomori.locks import TurnGuard
from tomori.prompt.opening import Opening
from tomori.prompt.prefill import without_prefill
from tomori.prompt.vision import tool_images_unseen
from tomori.providers.base import (
    ArgumentsProblem,
    Image,
    JsonObject,
    Provider,
    StreamRequest,
    ToolCall,
    ToolExchange,
)
from tomori.tools.confirmation import ToolAsk, Verdict, told_to_model
from tomori.tools.registry import ToolContext, ToolFailure, ToolOutput, ToolRegistry

log = logging.getLogger(__name__)

STILL_WORKING_AT = 20
CONFIRM_GRACE_S = 10.0
"""How long past its own timeout a place may take to end a confirmation's prompt."""

ARGUMENTS_PROBLEMS = {
    ArgumentsProblem.CUT_OFF: "its arguments arrived cut off",
    ArgumentsProblem.NOT_JSON: "its arguments are not valid JSON",
    ArgumentsProblem.NOT_AN_OBJECT: "its arguments are not a JSON object of named values",
}
"""What the log and the model are told of a call whose arguments cannot be used."""


@dataclass(frozen=True, slots=True)
class TurnEnvironment:
    """What every pass and every tool of one turn runs with, whichever model is answering."""

    state: TurnState
    tools: ToolRegistry
    guard: TurnGuard
    settings: Settings
    open_writer: Callable[[], StreamWriter]
    requester_id: str | None
    surface_errors: bool
    contexts: ContextBook
    """Each model's context budget, which its requests are fitted to (`attempt`)."""
    opening: Opening | None = None
    """The answer's prefill, if it has one, and whether the answer has begun with it."""


@dataclass(frozen=True, slots=True)
class LoopResult:
    """How the loop ended. `gave_up`: it hit its own limit (tool errors in a row, or passes)
    and said so; another model would meet the same tools, so the turn ends there."""

    status: StreamStatus
    passes: tuple[StreamResult, ...]
    tool_history: tuple[ToolExchange, ...]
    gave_up: bool = False

    @property
    def text(self) -> str:
        return "".join(result.text for result in self.passes)

    @property
    def last(self) -> StreamResult | None:
        """The last pass, whose ending is the loop's (None: the loop ran no pass)."""
        return self.passes[-1] if self.passes else None


@dataclass(frozen=True, slots=True)
class _Outcome:
    ok: bool
    payload: JsonObject
    kind: str = "used"
    """How the call ended, as the metrics count it: used, failed, timed_out, refused (killed
    calls raise `Stopped` instead)."""
    images: tuple[Image, ...] = ()


async def run_tool_loop(
    provider: Provider, request: StreamRequest, env: TurnEnvironment, fit: Fit
) -> LoopResult:
    state, guard, settings, surface_errors = env.state, env.guard, env.settings, env.surface_errors
    history = list(request.tool_history)
    passes: list[StreamResult] = []
    failures_in_a_row = 0
    specs = env.tools.specs()
    sent_characters = request_characters(request)

    def ended(status: StreamStatus, *, gave_up: bool = False) -> LoopResult:
        return LoopResult(status, tuple(passes), tuple(history), gave_up)

    for iteration in range(1, settings.max_function_call_iterations + 1):
        if not state.allows_pass():  # the asker's day ran out: the turn says so, once
            return ended(StreamStatus.OUT_OF_TOKENS)
        if iteration == STILL_WORKING_AT and surface_errors:
            await state.post_notice(STILL_WORKING)
        state.progress.report(Stage.WORKING)
        writer = env.open_writer()
        sent = fit(replace(request, tool_history=tuple(history), tools=specs))
        if env.opening is not None and env.opening.begun:  # its text, shown, stands for it
            sent = without_prefill(sent, env.opening.prefill.text)
        try:
            result = await stream_once(provider, sent, writer, state, guard, settings, env.opening)
        finally:
            await writer.aclose()
        passes.append(result)
        state.spent(pass_usage(result, sent_characters))
        if result.sprites and state.metrics is not None:
            state.metrics.record_sprites(state.guild_id, result.sprites)
        if result.status is not StreamStatus.FUNCTION_CALL:
            return ended(result.status)
        guard.calling_tools()  # a follow-up now waits for the answer that uses their results
        state.progress.report(Stage.TOOL)
        for position, call in enumerate(result.tool_calls):
            if guard.stop_requested():
                return ended(StreamStatus.STOPPED_BY_USER)
            started = time.monotonic()
            try:
                outcome = await _run_tool(call, env)
            except Stopped:
                _record(env, call, "killed", started)
                return ended(StreamStatus.STOPPED_BY_USER)
            _record(env, call, outcome.kind, started)
            pre_text = (result.text,) if position == 0 and result.text else ()
            exchange = ToolExchange(call, outcome.payload, pre_text, outcome.images)
            history.append(exchange if request.sees_images else tool_images_unseen(exchange))
            failures_in_a_row = 0 if outcome.ok else failures_in_a_row + 1
            if failures_in_a_row >= settings.max_consecutive_tool_errors:
                if surface_errors:
                    await state.post_notice(TOOL_ERROR_LOOP)
                return ended(StreamStatus.ERROR, gave_up=True)
    if surface_errors:
        await state.post_notice(THINKING_LOOP)
    return ended(StreamStatus.TIMEOUT, gave_up=True)


def _record(env: TurnEnvironment, call: ToolCall, outcome: str, started: float) -> None:
    """The call's ending in the log and the metrics: its tool and time, never its arguments
    (they may carry what the user would not have logged)."""
    log.info(
        "tool %s in channel %s: %s after %.2fs",
        call.name,
        env.state.channel_id,
        outcome,
        time.monotonic() - started,
    )
    if env.state.metrics is not None:
        tool = env.tools.get(call.name)
        server = None if tool is None else tool.mcp_server
        env.state.metrics.record_tool_call(env.state.guild_id, call.name, outcome, server)


def _failure(call: ToolCall, reason: str, kind: str = "failed") -> _Outcome:
    return _Outcome(
        False,
        {"status": "tool_execution_failed", "tool_name": call.name, "reason": reason},
        kind,
    )


def _not_run(call: ToolCall, reason: str) -> _Outcome:
    """A call its asker did not confirm: not a failure of the tool (the streak of failures
    that ends the loop does not count it), but the model is told plainly why."""
    payload: JsonObject = {"status": "not_run", "tool_name": call.name, "reason": reason}
    return _Outcome(True, payload, "refused")


async def _confirmed(ask: ToolAsk, env: TurnEnvironment) -> Verdict:
    """The asker's answer to `ask`, from the place the turn runs in; a /kill meanwhile raises
    `Stopped` (the place ends its prompt as stopped)."""
    confirmer = env.state.confirmer
    if confirmer is None or ask.requester_id is None:
        return Verdict.NOBODY_TO_ASK
    try:
        return await until_stopped(
            env.guard,
            confirmer.confirm(ask),
            timeout_s=ask.timeout_s + CONFIRM_GRACE_S,
            watched=True,
            name=f"tomori-confirm-{ask.tool}",
        )
    except TimeoutError:  # the place did not end its own wait: refused all the same
        return Verdict.TIMED_OUT


async def _run_tool(call: ToolCall, env: TurnEnvironment) -> _Outcome:
    state, guard, settings = env.state, env.guard, env.settings
    if call.problem is not None:
        log.warning("tool call %s not run: %s", call.name, ARGUMENTS_PROBLEMS[call.problem])
        return _failure(call, f"{ARGUMENTS_PROBLEMS[call.problem]}; issue the whole call again")
    tool = env.tools.get(call.name)
    if tool is None:
        known = ", ".join(spec.name for spec in env.tools.specs()) or "none"
        log.warning("the model asked for %r, which is no tool it was offered", call.name)
        return _failure(call, f"there is no tool named {call.name!r} (the tools are: {known})")
    if tool.confirmation is not None:
        timeout_s = seconds(settings.tool_confirm_timeout_ms)
        ask = ToolAsk(call.name, call.arguments, env.requester_id, tool.confirmation, timeout_s)
        verdict = await _confirmed(ask, env)
        if verdict is not Verdict.ALLOWED:
            return _not_run(call, told_to_model(verdict, ask))
    work = tool.run(ToolContext(state.channel_id, env.requester_id), call.arguments)
    try:
        payload = await until_stopped(
            guard,
            work,
            timeout_s=seconds(settings.tool_execution_timeout_ms),
            watched=True,
            name=f"tomori-tool-{call.name}",
        )
        if isinstance(payload, ToolOutput):
            return _Outcome(True, {"result": dict(payload.result)}, images=payload.images)
        return _Outcome(True, {"result": dict(payload)})
    except TimeoutError:
        budget = seconds(settings.tool_execution_timeout_ms)
        return _failure(call, f"the tool did not finish within {budget:g}s", "timed_out")
    except Stopped:
        raise
    except ToolFailure as failure:
        return _failure(call, str(failure))
    except Exception as error:
        log.warning("tool %s failed", call.name, exc_info=True)
        return _failure(call, f"the tool failed ({type(error).__name__})")
