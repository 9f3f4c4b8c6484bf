"""The order the model is shown messages in, as the function it is: whatever mix of history,
reply chain and thread starter was read, each message once, oldest first, the trigger last,
and nothing still queued for a turn of its own."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from tomori.prompt.conversation import in_time_order

IDS = st.integers(min_value=1, max_value=60)


@given(
    recent=st.lists(IDS, unique=True, max_size=20),
    earlier=st.lists(IDS, max_size=20),
    trigger=st.integers(min_value=61, max_value=80),
    waiting=st.sets(IDS, max_size=10),
    trigger_in_earlier=st.booleans(),
)
def test_each_message_once_oldest_first_the_trigger_last_none_waiting(
    recent: list[int],
    earlier: list[int],
    trigger: int,
    waiting: set[int],
    trigger_in_earlier: bool,
) -> None:
    history = [SimpleNamespace(id=i, source="history") for i in recent]
    found = [SimpleNamespace(id=i, source="found") for i in earlier]
    if trigger_in_earlier:
        found.append(SimpleNamespace(id=trigger, source="found"))
    asked = SimpleNamespace(id=trigger, source="trigger")
    shown = in_time_order(history, found, asked, {str(i) for i in waiting})
    assert shown[-1] is asked
    before = [message.id for message in shown[:-1]]
    assert before == sorted((set(recent) | set(earlier)) - waiting)
    # a message the history holds is shown as the history read it
    assert all(m.source == "history" for m in shown[:-1] if m.id in recent)
