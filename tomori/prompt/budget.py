"""The request fitted to a model's context: the one rule for what goes when it is too long.

A model's context holds the request and the answer; a server handed more either refuses it or,
worse, silently drops its start (Ollama), system prompt and persona first. So each model is
sent the turn's context fitted to its room (`tomori.generation.contexts` says how much), as
estimated by `tomori.prompt.tokens` scaled by the ratio learned of that model. Always sent,
whatever it costs: the system items (the system prompt, the persona), the request-only notes,
the tools, the turn's tool calls, and the items marked `pinned` (the trigger, the chain it
replies to, what a /respond said, a prefill). Every pass of the tool loop is fitted so, its
tool results with it. First, though, each of the bot's own notes (`ContextItem.note`: the
memories, the channel's summary) is cut to `NOTE_SHARE` of the room, its last lines first
(they are the least needed), so a small model still gets the trigger and the recent history.
Then, while the request is too long:
1. the tool results over a quarter of the room (`FILE_SHARE`) are cut to it, the biggest
   first, only as far as needed (`tomori.prompt.tool_cuts`: a note says the rest is left out);
2. the text of every attachment, the history's and the pinned items' (the trigger's own
   file), may be cut, each to no less than a quarter of the room, before any message is left
   out: the oldest messages are left out only as far as that is not enough;
3. the attachments of the history left are cut that far, oldest message first, the last one
   only as far as needed (a marker says the rest is left out);
4. the attachments of the pinned items are cut as far as needed: to their quarter while any
   history is left (step 2 left out none that their cut could spare), past it only when
   none is;
5. the tool results are cut further, the biggest first, as far as needed.
What is left over then is sent as it is: the server's refusal, if it refuses, is retried
tighter once and then handed to the next model (`tomori.generation.attempt`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from tomori.prompt.conversation import CONTINUED
from tomori.prompt.tokens import exchange_tokens, fixed_tokens, item_tokens, scaled
from tomori.prompt.tool_cuts import cut_results
from tomori.providers.base import ContextItem, Role, StreamRequest, ToolExchange

CUT_MARKER = f"\n{CONTINUED}[... the rest of the attached text is left out here: it did not fit]"
"""What ends an attachment's text the budget cut, so the model knows there was more."""
FILE_SHARE = 4
"""A message's attachments (the history's and the trigger's own) are cut to a quarter of the
room before any message is left out: the file a question is about is most often just before
it, or on it, and a big one would otherwise push out the whole history."""
NOTE_SHARE = 8
"""Each of the bot's notes takes at most an eighth of the room: the memories and the summary
together a quarter, leaving three quarters to the system prompt, the persona, the trigger and
the recent history, which are what the answer is to. On a model of 2,000 tokens that is about
190 tokens a note (one memory near its 300-character bound or about four short ones, a
summary's first paragraph); on one of 32,768 it is 3,584, more than ten memories of 300
characters or a 300-token summary take: the cap bites on small models alone."""
NOTE_CUT = "…"
"""What ends a note's line cut short."""


@dataclass(frozen=True, slots=True)
class Fitted:
    """A request as fitted, with what it cost and what fitting it took."""

    request: StreamRequest
    tokens: int
    """Its tokens, as the model's server is estimated to count them."""
    room: int
    """The tokens it was fitted to: each later pass of its tool loop is fitted to them too."""
    left_out: int = 0
    """History messages left out."""
    cut: int = 0
    """Messages whose attachments' text was cut."""
    results_cut: int = 0
    """Tool results cut."""
    notes_cut: int = 0
    """The bot's notes cut to their share of the room."""


def fitted(request: StreamRequest, room: int, ratio: float = 1.0) -> Fitted:
    """`request` within `room` tokens, counted at `ratio` (see the module docstring)."""

    def cost(item: ContextItem) -> int:
        return scaled(item_tokens(item), ratio)

    def exchange_cost(exchange: ToolExchange) -> int:
        return scaled(exchange_tokens(exchange), ratio)

    request, notes_cut = _notes_cut(request, room // NOTE_SHARE, cost)
    items: list[ContextItem | None] = list(request.context)
    costs = [cost(item) for item in request.context]
    over = scaled(fixed_tokens(request), ratio) + sum(costs) - room
    if over <= 0:
        return Fitted(request, room + over, room, notes_cut=notes_cut)
    keep = room // FILE_SHARE
    exchanges, over = cut_results(request.tool_history, over, exchange_cost, keep=keep)
    history = [n for n, item in enumerate(request.context) if not _kept(item)]
    pinned = [n for n, item in enumerate(request.context) if _kept(item)]
    floors = {n: _floor(request.context[n], costs[n], cost, keep) for n in history + pinned}
    at_floors = over - sum(costs[n] - floors[n] for n in history + pinned)
    left_out = 0
    for n in history:  # those that cannot stay, even with every file cut as far as allowed
        if at_floors <= 0:
            break
        at_floors -= floors[n]
        over -= costs[n]
        items[n] = None
        left_out += 1
    cut = 0
    for n in history:
        if over <= 0:
            break
        over, cut = _cut_files(items, costs, n, over, cost, cut, keep=keep)
    for n in pinned:
        if over <= 0:
            break
        over, cut = _cut_files(items, costs, n, over, cost, cut, keep=0)
    exchanges, over = cut_results(exchanges, over, exchange_cost, keep=0)
    context = tuple(item for item in items if item is not None)
    fit = replace(request, context=context, tool_history=exchanges)
    whole = request.tool_history
    results_cut = sum(1 for new, old in zip(exchanges, whole, strict=True) if new is not old)
    return Fitted(fit, room + over, room, left_out, cut, results_cut, notes_cut)


def _notes_cut(
    request: StreamRequest, share: int, cost: Callable[[ContextItem], int]
) -> tuple[StreamRequest, int]:
    """`request` with each of its notes within `share` tokens (a note left with no line past
    its header goes), and how many were cut."""
    cut = 0

    def capped(items: tuple[ContextItem, ...]) -> tuple[ContextItem, ...]:
        nonlocal cut
        kept: list[ContextItem] = []
        for item in items:
            if item.note and cost(item) > share:
                cut += 1
                shorter = _note_within(item, share, cost)
                if shorter is None:
                    continue
                item = shorter
            kept.append(item)
        return tuple(kept)

    context, notices = capped(request.context), capped(request.request_notices)
    if not cut:
        return request, 0
    return replace(request, context=context, request_notices=notices), cut


def _note_within(
    item: ContextItem, share: int, cost: Callable[[ContextItem], int]
) -> ContextItem | None:
    """The note `item` with its header and as many of its next lines as fit `share`, the
    line that does not fit cut at a word (`NOTE_CUT`); None if not a word of them fits."""
    header, *lines = item.text.split("\n")

    def costs(kept: list[str]) -> int:
        return cost(replace(item, text="\n".join(kept)))

    kept = [header]
    for line in lines:
        if costs([*kept, line]) <= share:
            kept.append(line)
            continue
        words = line.split(" ")
        fits, fails = 0, len(words)  # the most words of the line that fit, by halves
        while fails - fits > 1:
            middle = (fits + fails) // 2
            if costs([*kept, " ".join(words[:middle]) + NOTE_CUT]) <= share:
                fits = middle
            else:
                fails = middle
        if fits:
            kept.append(" ".join(words[:fits]) + NOTE_CUT)
        break
    return replace(item, text="\n".join(kept)) if len(kept) > 1 else None


def _kept(item: ContextItem) -> bool:
    return item.pinned or item.role is Role.SYSTEM


def _floor(item: ContextItem, full: int, cost: Callable[[ContextItem], int], keep: int) -> int:
    """What `item` costs with its files cut as far as the first step cuts them."""
    if item.files_at is None:
        return full
    return min(full, cost(replace(item, text=item.text[: item.files_at] + CUT_MARKER)) + keep)


def _cut_files(
    items: list[ContextItem | None],
    costs: list[int],
    n: int,
    over: int,
    cost: Callable[[ContextItem], int],
    cut: int,
    *,
    keep: int,
) -> tuple[int, int]:
    """Item `n` with its attachments' text cut as far as `over` needs, `keep` tokens of it
    kept at least; what is still over, and how many items are cut now."""
    item = items[n]
    if item is None or item.files_at is None:
        return over, cut
    head, files = item.text[: item.files_at], item.text[item.files_at :]
    bare = cost(replace(item, text=head + CUT_MARKER))
    target = max(costs[n] - over, bare + keep)
    if costs[n] <= target:
        return over, cut
    # The share of the files' text that fits, as a first guess; then less until it does.
    kept = int(len(files) * (target - bare) / max(1, costs[n] - bare))
    while kept > 0 and cost(replace(item, text=head + files[:kept] + CUT_MARKER)) > target:
        kept = kept * 9 // 10
    shorter = replace(item, text=head + files[:kept] + CUT_MARKER, files_at=None)
    saved = costs[n] - cost(shorter)
    if saved <= 0:
        return over, cut
    items[n], costs[n] = shorter, costs[n] - saved
    return over - saved, cut + 1
