"""A queued turn's request survives the lock store's JSON, and rows of earlier versions read."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tomori.cast.scenes import Scene
from tomori.turns import Addressed, Respond, TurnRequest

keys = st.text(alphabet="abcdefghij ", min_size=1, max_size=8)
texts = st.none() | st.text(max_size=40)
requests = st.builds(
    TurnRequest,
    st.sampled_from(Addressed),
    st.lists(keys, max_size=3).map(tuple),
    st.none()
    | st.builds(
        Scene, st.lists(keys, max_size=3).map(tuple), st.integers(1, 10), st.text(max_size=40)
    ),
    st.none() | st.builds(Respond, st.text(max_size=20), texts, texts),
)


@given(requests)
def test_every_request_reads_back_as_it_was_written(request: TurnRequest) -> None:
    stored = json.loads(json.dumps(request.encode()))
    assert TurnRequest.decode(stored) == request


def test_a_trigger_carries_the_request_and_its_queue_details() -> None:
    asked = TurnRequest(Addressed.PASSIVELY, ("aria",))
    trigger = asked.trigger("1", "2", "3", received_at=5.0, follow_up_key="aria")
    assert (trigger.channel_id, trigger.message_id, trigger.requester_id) == ("1", "2", "3")
    assert (trigger.received_at, trigger.follow_up_key) == (5.0, "aria")
    assert TurnRequest.of(trigger) == asked


def test_rows_queued_by_earlier_versions_still_read() -> None:
    # Before `addressed`, a trigger said whether its asker hears of errors.
    assert TurnRequest.decode({"surface_errors": True}) == TurnRequest(Addressed.DIRECTLY)
    assert TurnRequest.decode({}) == TurnRequest(Addressed.PASSIVELY)
    # A /respond and a /scene as the cog queued them before the request was typed.
    respond = {
        "addressed": "direct",
        "personas": ["aria"],
        "manual": {"asker": "Mika", "prompt": "hi", "prefill": None},
    }
    assert TurnRequest.decode(respond) == TurnRequest(
        Addressed.DIRECTLY, ("aria",), respond=Respond("Mika", "hi", None)
    )
    scene = {"addressed": "direct", "scene": {"cast": ["a", "b"], "cycles": 2, "instructions": ""}}
    assert TurnRequest.decode(scene).scene == Scene(("a", "b"), 2, "")
