"""Shaping a pass's request around an output prefill.

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

from dataclasses import replace

from tomori.prompt.conversation import joined_turns
from tomori.providers.base import ContextItem, Role, StreamRequest, ToolExchange


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
