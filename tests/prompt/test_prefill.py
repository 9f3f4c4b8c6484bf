from __future__ import annotations

from tomori.prompt.prefill import (
    Prefill,
    fold_prefill_into_tool_history,
    insert_request_notices,
    instruction,
    prefilled,
    prepare_request,
    reaches,
    without_prefill,
)
from tomori.providers.base import (
    ContextItem,
    Image,
    Role,
    StreamRequest,
    ToolCall,
    ToolExchange,
)

PREFILL = "Tomori: Well,"
USER = ContextItem(Role.USER, "hi")
PREFILL_ITEM = ContextItem(Role.ASSISTANT, PREFILL)
NOTICE = ContextItem(Role.USER, "Tool calls already done: lookup.")
PNG = Image(b"\x89PNG", "image/png")
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
    # the notice joins the user's turn: roles alternate, as strict chat templates need
    assert prepared.context == (ContextItem(Role.USER, f"{USER.text}\n{NOTICE.text}"),)
    assert prepared.tool_history[0].pre_tool_text == (PREFILL, "Checking.")
    assert prepared.request_notices == ()


def test_a_prepared_request_shows_consecutive_items_of_one_role_as_one_turn() -> None:
    answer_parts = [ContextItem(Role.ASSISTANT, f"Part {n}.") for n in range(3)]
    image_item = ContextItem(Role.USER, "Bob: and this", (PNG,))
    request = StreamRequest(
        model="m", context=(USER, image_item, *answer_parts, USER, PREFILL_ITEM)
    )
    prepared = prepare_request(request)
    assert [item.role for item in prepared.context] == [
        Role.USER,
        Role.ASSISTANT,
        Role.USER,
        Role.ASSISTANT,
    ]
    assert prepared.context[0] == ContextItem(Role.USER, "hi\nBob: and this", (PNG,))
    assert prepared.context[1].text == "Part 0.\nPart 1.\nPart 2."


def test_a_native_prefill_stays_its_own_last_turn_after_an_answer() -> None:
    request = StreamRequest(
        model="m",
        context=(USER, ContextItem(Role.ASSISTANT, "Earlier."), PREFILL_ITEM),
        output_prefill=PREFILL,
    )
    assert prepare_request(request).context[-1] == PREFILL_ITEM


def test_a_native_prefill_is_the_last_turn_and_an_instruction_the_last_notice() -> None:
    request = StreamRequest(model="m", context=(USER,), request_notices=(NOTICE,))
    native = prefilled(request, Prefill(PREFILL), native=True)
    assert native.context == (USER, PREFILL_ITEM)
    assert native.output_prefill == PREFILL
    sent = prepare_request(native).context
    assert sent[-1] == PREFILL_ITEM
    assert sent[-2].text.endswith(NOTICE.text)  # the notice before it, joined to the user's
    worded = prefilled(request, Prefill(PREFILL, manual=True), native=False)
    assert worded.context == (USER,)
    assert worded.output_prefill is None
    assert worded.request_notices == (NOTICE, instruction(PREFILL))
    assert worded.request_notices[-1].text == (
        'Begin your next reply with: "Tomori: Well,". Continue directly after it without '
        "repeating the prefix."
    )


def test_a_server_prefill_reaches_only_a_model_that_takes_it_natively() -> None:
    assert reaches(Prefill(PREFILL), native=True)
    assert not reaches(Prefill(PREFILL), native=False)
    assert reaches(Prefill(PREFILL, manual=True), native=False)


def test_once_the_answer_has_begun_the_prefill_is_taken_out_either_way() -> None:
    request = StreamRequest(model="m", context=(USER,), request_notices=(NOTICE,))
    for native in (True, False):
        shaped = prefilled(request, Prefill(PREFILL, manual=True), native=native)
        assert without_prefill(shaped, PREFILL) == request
