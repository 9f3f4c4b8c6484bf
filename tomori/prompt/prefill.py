"""Shaping a pass's request around an output prefill.

A prefill is text the answer must begin with: one an admin set to stay (`/tomori prefill`,
the server prefill, or a persona's own) or one given for a single turn (`/respond`, the manual
prefill, which replaces the others, never joined to them). Each model of the chain takes it
its own way (`prefilled`): natively where its provider continues a trailing assistant turn,
else, for a manual prefill, as a written instruction; a prefill set to stay that a model
cannot take natively is dropped (logged), as the original bot does with the server's. Once the
answer has begun (`opening.Opening`), no pass is sent it again: the text already shown, which
begins with it, stands in its place (`without_prefill`).

A native prefill is an assistant turn holding exactly the text the reply must begin with; it
only works as the last item of the context. Two rules keep it working:
- request-only notices go before it, so it stays last;
- once tool history exists, it moves into the first exchange's pre-tool text, because a prefill
  left in place would sit before the tool-call turn as a second assistant turn in a row, which
  strict-alternation backends (Gemini among them) reject.
Both return new tuples and never change their inputs: a retry reruns on the same base context,
which must still end with the prefill.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tomori.prompt.conversation import joined_turns
from tomori.providers.base import ContextItem, Role, StreamRequest, ToolExchange

MAX_PREFILL_CHARS = 2_000
"""The longest prefill (the original's limit): it is posted as the answer's first words, and a
Discord message holds 2,000 characters."""

INSTRUCTION = (
    'Begin your next reply with: "{prefill}". Continue directly after it without repeating '
    "the prefix."
)
"""What a model that takes no native prefill is told of a manual one, last in its request."""


@dataclass(frozen=True, slots=True)
class Prefill:
    """The text a turn's answer begins with, and where it came from."""

    text: str
    manual: bool = False
    """Given for this turn (`/respond`): told as an instruction where it cannot be native.
    False: one set to stay (the server's, channel's or a persona's), dropped where it cannot
    be native."""


def instruction(prefill: str) -> ContextItem:
    """The request-only notice that asks a model to begin with `prefill`."""
    return ContextItem(Role.USER, INSTRUCTION.format(prefill=prefill))


def reaches(prefill: Prefill, *, native: bool) -> bool:
    """Whether a model is sent `prefill` at all: natively where it takes one, else a manual
    one in words; one set to stay that it cannot take natively is dropped for it."""
    return native or prefill.manual


def prefilled(request: StreamRequest, prefill: Prefill, *, native: bool) -> StreamRequest:
    """`request` as a model is sent `prefill`: a trailing assistant turn where it takes one
    (`native`), else the instruction (`reaches` says whether it is sent at all)."""
    if native:
        return replace(
            request,
            context=(*request.context, ContextItem(Role.ASSISTANT, prefill.text, pinned=True)),
            output_prefill=prefill.text,
        )
    notices = (*request.request_notices, instruction(prefill.text))
    return replace(request, request_notices=notices)


def without_prefill(request: StreamRequest, prefill: str) -> StreamRequest:
    """`request` without what `prefilled` added for `prefill`: the answer has begun with it."""
    context = request.context
    if ends_with_native_prefill(context, request.output_prefill):
        context = context[:-1]
    asked = instruction(prefill)
    return replace(
        request,
        context=context,
        output_prefill=None,
        request_notices=tuple(n for n in request.request_notices if n != asked),
    )


def ends_with_native_prefill(context: tuple[ContextItem, ...], prefill: str | None) -> bool:
    if not prefill or not context:
        return False
    last = context[-1]
    return last.role is Role.ASSISTANT and last.text == prefill and not last.images


def insert_request_notices(
    context: tuple[ContextItem, ...],
    notices: tuple[ContextItem, ...],
    prefill: str | None,
) -> tuple[ContextItem, ...]:
    """Add notices meant for this request only, before a trailing native prefill if any."""
    if not notices:
        return context
    if ends_with_native_prefill(context, prefill):
        return (*context[:-1], *notices, context[-1])
    return (*context, *notices)


def fold_prefill_into_tool_history(
    context: tuple[ContextItem, ...],
    tool_history: tuple[ToolExchange, ...],
    prefill: str | None,
) -> tuple[tuple[ContextItem, ...], tuple[ToolExchange, ...]]:
    """Move a trailing native prefill into the first tool exchange's pre-tool text."""
    if not tool_history or not ends_with_native_prefill(context, prefill):
        return context, tool_history
    assert prefill is not None
    first = tool_history[0]
    folded = replace(first, pre_tool_text=(prefill, *first.pre_tool_text))
    return context[:-1], (folded, *tool_history[1:])


def prepare_request(request: StreamRequest) -> StreamRequest:
    """The request a provider is sent: notices placed, turns of one role joined (a native
    prefill stays last, apart), prefill folded, notices consumed."""
    context = insert_request_notices(
        request.context, request.request_notices, request.output_prefill
    )
    if ends_with_native_prefill(context, request.output_prefill):
        context = (*joined_turns(context[:-1]), context[-1])
    else:
        context = joined_turns(context)
    context, history = fold_prefill_into_tool_history(
        context, request.tool_history, request.output_prefill
    )
    return replace(request, context=context, tool_history=history, request_notices=())
