"""Tool results cut to fit: the biggest first, only as far as needed, each keeping its start
with a note the model reads; a result cut again is shortened, never wrapped twice."""

from __future__ import annotations

from tomori.prompt.budget import fitted
from tomori.prompt.tokens import request_tokens
from tomori.prompt.tool_cuts import CUT_NOTE
from tomori.providers.base import ContextItem, Role, StreamRequest, ToolCall, ToolExchange


def exchange(name: str, words: int) -> ToolExchange:
    text = " ".join(f"{name} word {n}" for n in range(words))
    return ToolExchange(ToolCall(f"id-{name}", "read", {}, "{}"), {"result": {"text": text}})


def request(*exchanges: ToolExchange) -> StreamRequest:
    trigger = ContextItem(Role.USER, "alice: read them", pinned=True)
    return StreamRequest("m", (ContextItem(Role.SYSTEM, "be brief"), trigger), exchanges)


def test_the_biggest_result_is_cut_first_and_only_as_far_as_needed() -> None:
    whole = request(exchange("small", 10), exchange("big", 300))
    room = request_tokens(whole) - 100
    fit = fitted(whole, room)
    small, big = fit.request.tool_history
    assert small == whole.tool_history[0]  # untouched
    assert big.result["left_out"] == CUT_NOTE
    assert str(big.result["partial_result"]).startswith('{"result": {"text": "big word 0')
    assert fit.tokens <= room
    assert fit.results_cut == 1
    assert fit.request.context == whole.context  # the trigger and the prompt stay


def test_a_result_cut_again_is_shortened_not_wrapped_twice() -> None:
    whole = request(exchange("big", 300))
    once = fitted(whole, request_tokens(whole) - 100).request
    twice = fitted(once, request_tokens(once) - 100).request
    (result,) = [e.result for e in twice.tool_history]
    assert set(result) == {"partial_result", "left_out"}
    assert str(result["partial_result"]).startswith('{"result"')
    assert len(str(result["partial_result"])) < len(
        str(once.tool_history[0].result["partial_result"])
    )
