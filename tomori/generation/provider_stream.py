"""The generation task of a pass: the provider's stream read to its end, its visible text
handed to the writer, hidden blocks (`<details>`, `<think>`) kept as details, tool calls, usage
and the finish gathered, and how the pass ended told as a `StreamResult`.

It knows nothing of time: `stream_once` runs it under the rolling timeout and cancels it.
"""

from __future__ import annotations

import logging
from contextlib import aclosing
from dataclasses import dataclass, field

from tomori.delivery.hidden import HiddenBlocks
from tomori.delivery.port import AnswerCut, StreamWriter
from tomori.generation.results import StreamResult, StreamStatus, TimedOut
from tomori.generation.state import TurnState
from tomori.prompt.opening import OpeningReader
from tomori.providers.base import (
    DetailsDelta,
    Finish,
    Provider,
    ProviderError,
    StreamRequest,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
    UsageEvent,
)

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Gathered:
    """What the generation task gathered, readable however the pass ended."""

    details: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    finish: Finish | None = None
    read: int = 0
    """Characters read from the provider, visible or hidden: bounded by `most_read`."""
    answered: bool = False
    """The model wrote visible text: whether Discord took it is another matter."""
    reading: bool = True
    """The provider's stream is still being read (delivery alone may remain after)."""


async def generate(
    provider: Provider,
    request: StreamRequest,
    writer: StreamWriter,
    state: TurnState,
    gathered: Gathered,
    read_limit: int,
    opening: OpeningReader | None = None,
) -> StreamResult:
    """Read the provider to its end and deliver its text: the generation task.

    A pass reads at most `read_limit` characters: past it the answer is cut as at the message
    ceiling, since every event is progress and a model looping on hidden text would otherwise
    hold the channel until /kill.
    """
    progress = state.on_stream_progress or _no_progress_hook
    hidden = HiddenBlocks()  # <details> and <think> bodies go to details, not the channel
    try:
        try:
            async with aclosing(provider.stream(request)) as events:
                async for event in events:
                    progress()
                    if type(event) is TextDelta:
                        gathered.read += len(event.text)
                        _deliver(hidden.feed(event.text), writer, gathered, opening)
                    elif type(event) is DetailsDelta:
                        gathered.read += len(event.text)
                        gathered.details.append(event.text)
                    elif type(event) is ToolCallEvent:
                        gathered.tool_calls.append(event.call)
                    elif type(event) is UsageEvent:
                        gathered.usage = event.usage
                    elif type(event) is Finish:
                        gathered.finish = event
                    if gathered.read > read_limit:
                        _read_too_much(provider, state, read_limit)
                        writer.cut()
                        break
                else:
                    _deliver(hidden.finish(), writer, gathered, opening)
                    if opening is not None:
                        _deliver((opening.finish(), ""), writer, gathered)
        finally:
            gathered.reading = False
    except AnswerCut:  # the ceiling: leaving the loop closed the provider's stream
        log.warning("answer in channel %s cut at its message ceiling", state.channel_id)
        await writer.finish()
        return partial(StreamStatus.COMPLETED, writer, gathered, gathered.finish)
    except ProviderError as error:
        await writer.settle()  # as after a stall: complete lines stay, the unfinished one goes
        return partial(StreamStatus.ERROR, writer, gathered, error)
    if gathered.read > read_limit:  # cut: a tool call it made on the way is not run
        await writer.finish()
        status = StreamStatus.COMPLETED if gathered.answered else StreamStatus.EMPTY_RESPONSE
        return partial(status, writer, gathered, gathered.finish)
    await writer.finish()
    if gathered.tool_calls:
        return partial(StreamStatus.FUNCTION_CALL, writer, gathered, tuple(gathered.tool_calls))
    # empty is what the model wrote, not what Discord took: a refused send is no empty answer
    status = StreamStatus.COMPLETED if gathered.answered else StreamStatus.EMPTY_RESPONSE
    return partial(status, writer, gathered, gathered.finish)


def _read_too_much(provider: Provider, state: TurnState, read_limit: int) -> None:
    log.warning(
        "answer in channel %s cut: %s wrote more than %d characters in one pass",
        state.channel_id,
        provider.name,
        read_limit,
    )


def _deliver(
    decided: tuple[str, str],
    writer: StreamWriter,
    gathered: Gathered,
    opening: OpeningReader | None = None,
) -> None:
    visible, captured = decided
    if opening is not None:
        visible = opening.feed(visible)
    if captured:
        gathered.details.append(captured)
    if visible:
        gathered.answered = True
        writer.feed(visible)


def _no_progress_hook() -> None:
    pass


def partial(
    status: StreamStatus,
    writer: StreamWriter,
    gathered: Gathered,
    data: Finish | tuple[ToolCall, ...] | ProviderError | TimedOut | None = None,
) -> StreamResult:
    return StreamResult(
        status=status,
        text=writer.delivered_text,
        details="".join(gathered.details),
        sprites=writer.sprites,
        usage=gathered.usage,
        data=data,
    )
