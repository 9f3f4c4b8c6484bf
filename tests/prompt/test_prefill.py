from __future__ import annotations

from tomori.prompt.prefill import (
    fold_prefill_into_tool_history,
    insert_request_notices,
    prepare_request,
)
from tomori.providers.base import ContextItem, Role, StreamRequest, ToolCall, ToolExchange

PREFILL = "Tomori: Well,"
USER = ContextItem(Role.USER, "hi")
PREFILL_ITEM = ContextItem(Role.ASSISTANT, PREFILL)
NOTICE = ContextItem(Role.USER, "Tool calls already done: lookup.")
EXCHANGE = ToolExchange(ToolCall("1", "lookup", {}), {"result": 1}, pre_tool_text=("Checking.",))


def test_prefill_moves_to_the_front_of_the_first_exchanges_pre_tool_text() -> None:
    context = (USER, PREFILL_ITEM)
    history = (EXCHANGE, EXCHANGE)
    folded_context, folded_history = fold_prefill_into_tool_history(context, history, PREFILL)
    assert folded_context == (USER,)
    assert folded_history[0].pre_tool_text == (PREFILL, "Checking.")
    assert folded_history[1] == EXCHANGE
    assert context == (USER, PREFILL_ITEM)  # inputs untouched
    assert EXCHANGE.pre_tool_text == ("Checking.",)


def test_nothing_is_folded_without_history_or_when_the_last_item_is_not_the_prefill() -> None:
    assert fold_prefill_into_tool_history((USER, PREFILL_ITEM), (), PREFILL) == (
        (USER, PREFILL_ITEM),
        (),
    )
    other = ContextItem(Role.ASSISTANT, "Tomori: Hmm")
    assert fold_prefill_into_tool_history((USER, other), (EXCHANGE,), PREFILL) == (
        (USER, other),
        (EXCHANGE,),
    )
    assert fold_prefill_into_tool_history((USER, PREFILL_ITEM), (EXCHANGE,), None)[0] == (
        USER,
        PREFILL_ITEM,
    )


def test_request_notices_go_before_a_native_prefill_so_it_stays_last() -> None:
    assert insert_request_notices((USER, PREFILL_ITEM), (NOTICE,), PREFILL) == (
        USER,
        NOTICE,
        PREFILL_ITEM,
    )
    assert insert_request_notices((USER,), (NOTICE,), PREFILL) == (USER, NOTICE)


def test_a_prepared_request_places_notices_then_folds_the_prefill() -> None:
    request = StreamRequest(
        model="m",
        context=(USER, PREFILL_ITEM),
        tool_history=(EXCHANGE,),
        output_prefill=PREFILL,
        request_notices=(NOTICE,),
    )
    prepared = prepare_request(request)
    assert prepared.context == (USER, NOTICE)
    assert prepared.tool_history[0].pre_tool_text == (PREFILL, "Checking.")
    assert prepared.request_notices == ()
