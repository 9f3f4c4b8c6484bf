"""Tool results cut to fit a model's context: what a result too long to send becomes.

A tool's result (an MCP server's page, a message `read_message` read) is the turn's own, sent
whole while the request fits; each pass of the tool loop is fitted again, so a result that
pushes the next pass past the model's context is cut rather than the pass refused. Results are
cut the biggest first, each only as far as needed and to no less than `keep` tokens: the
result's JSON text kept from its start, and a note the model reads saying the rest is left out
(`CUT_NOTE`). When, and how far, is the budget's rule (`tomori.prompt.budget`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace

from tomori.providers.base import JsonObject, ToolExchange

CUT_NOTE = (
    "the rest of this tool result is left out here: it did not fit the model's context."
    " Ask for less (a part, a page, a search) if you need more of it"
)
"""What a cut result says beside the part of it kept, so the model knows there was more."""


def cut_result(text: str) -> JsonObject:
    """A result shortened to `text` (the start of its JSON), with the note."""
    return {"partial_result": text, "left_out": CUT_NOTE}


def result_text(exchange: ToolExchange) -> str:
    """The result as its JSON text, what is kept of a cut one being its start; of a result cut
    already, the part kept (cut again, it is shortened, not wrapped twice)."""
    result = exchange.result
    if result.get("left_out") == CUT_NOTE and isinstance(result.get("partial_result"), str):
        return str(result["partial_result"])
    return json.dumps(result, default=str, ensure_ascii=False)


def cut_results(
    exchanges: Sequence[ToolExchange],
    over: int,
    cost: Callable[[ToolExchange], int],
    *,
    keep: int,
) -> tuple[tuple[ToolExchange, ...], int]:
    """`exchanges` with their results cut, the biggest first, until `over` tokens are saved or
    each is down to `keep` tokens of its text; and what is still over."""
    items = list(exchanges)
    costs = [cost(exchange) for exchange in items]
    for n in sorted(range(len(items)), key=lambda n: -costs[n]):
        if over <= 0:
            break
        shorter = _shortened(items[n], costs[n], over, cost, keep)
        if shorter is None:
            continue
        saved = costs[n] - cost(shorter)
        items[n], costs[n] = shorter, costs[n] - saved
        over -= saved
    return tuple(items), over


def _shortened(
    exchange: ToolExchange,
    full: int,
    over: int,
    cost: Callable[[ToolExchange], int],
    keep: int,
) -> ToolExchange | None:
    """`exchange` with its result cut as far as `over` needs, `keep` tokens kept at least;
    None when that saves nothing."""
    text = result_text(exchange)
    bare = cost(replace(exchange, result=cut_result("")))
    target = max(full - over, bare + keep)
    if full <= target:
        return None
    # The share of the text that fits, as a first guess; then less until it does.
    kept = int(len(text) * (target - bare) / max(1, full - bare))
    while kept > 0 and cost(replace(exchange, result=cut_result(text[:kept]))) > target:
        kept = kept * 9 // 10
    shorter = replace(exchange, result=cut_result(text[:kept]))
    return shorter if cost(shorter) < full else None
