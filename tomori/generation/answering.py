"""`answer_turn`: a turn's context answered by the model chain into one channel, through a port.

The cog and the terminal console both run their turns through it, so a console session shows
exactly what a Discord channel would: the same writer, cut into the same messages, in the
configured delivery mode, under the same budgets and fallbacks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from tomori.config.models import ModelEntry
from tomori.config.settings import Settings, seconds
from tomori.delivery.notices import NOT_DELIVERED
from tomori.delivery.port import ChannelPort
from tomori.delivery.sprite_markers import Wardrobe
from tomori.delivery.writer import ChannelWriter
from tomori.generation.chain import ChainResult, run_chain
from tomori.generation.contexts import ContextBook
from tomori.generation.health import ModelHealth
from tomori.generation.results import StreamStatus
from tomori.generation.state import TurnState
from tomori.generation.tool_loop import TurnEnvironment
from tomori.locks import Turn, TurnGuard
from tomori.prompt.opening import Opening
from tomori.prompt.prefill import Prefill
from tomori.providers.base import ContextItem, Provider, StreamRequest
from tomori.tools.registry import ToolRegistry
from tomori.turn_log import note_outcome

log = logging.getLogger(__name__)


async def answer_turn(
    turn: Turn,
    guard: TurnGuard,
    state: TurnState,
    port: ChannelPort,
    *,
    entries: tuple[ModelEntry, ...],
    providers: Mapping[str, Provider],
    tools: ToolRegistry,
    settings: Settings,
    context: tuple[ContextItem, ...],
    request_notices: tuple[ContextItem, ...] = (),
    surface_errors: bool,
    health: ModelHealth | None = None,
    wardrobe: Wardrobe | None = None,
    prefill: Prefill | None = None,
    contexts: ContextBook,
) -> ChainResult:
    """Run the chain on `context`, each pass writing into `port`; log how the turn ended.

    `prefill` is what the answer begins with, given by the caller each time (None: nothing;
    which one is `tomori.turns.request.AnswerBrief.prefill_for`'s rule).

    The turn's first message marks it answered (`TurnGuard.mark_answered`): a turn cut short
    after that is never run again, one cut before it is; a tool call a stop cut short is told
    to the guard (`TurnGuard.cut_short`). `wardrobe`: the speaking persona's sprites, which
    its markers switch between; `contexts`: each model's context budget, which its requests
    are fitted to."""
    state.on_first_message = guard.mark_answered
    result = await run_chain(
        entries,
        providers,
        StreamRequest(
            model="",
            context=context,
            request_notices=request_notices,
            max_output_tokens=settings.max_output_tokens,
            temperature=settings.temperature,
        ),
        TurnEnvironment(
            state=state,
            tools=tools,
            guard=guard,
            settings=settings,
            open_writer=lambda: ChannelWriter(
                port,
                state,
                delivery=settings.delivery,
                edit_interval_s=seconds(settings.stream_edit_interval_ms),
                max_answer_chars=settings.max_answer_chars,
                wardrobe=wardrobe,
            ),
            requester_id=turn.trigger.requester_id,
            surface_errors=surface_errors,
            contexts=contexts,
            opening=Opening(prefill) if prefill is not None else None,
        ),
        health,
    )
    tool = cut_tool(result)
    if tool is not None:
        guard.cut_short(tool)
    if state.undelivered and surface_errors and not guard.stop_requested():
        await state.post_notice(NOT_DELIVERED)
    note_outcome(result.status)
    log.info(
        "turn %s in channel %s: %s after %s, %d characters delivered%s",
        turn.turn_id,
        turn.channel_id,
        result.status,
        ", ".join(attempt.model.label for attempt in result.attempts) or "no model",
        len(result.text),
        " (channel unreachable)" if result.unreachable else "",
    )
    return result


def cut_tool(result: ChainResult) -> str | None:
    """The tool call a stop cut short, if it ended the chain while its last pass's calls ran:
    the first of them that got no result."""
    if result.status is not StreamStatus.STOPPED_BY_USER or not result.attempts:
        return None
    loop = result.attempts[-1].result
    last = loop.last
    if last is None or last.status is not StreamStatus.FUNCTION_CALL:
        return None
    done = {exchange.call.id for exchange in loop.tool_history}
    return next((call.name for call in last.tool_calls if call.id not in done), None)
