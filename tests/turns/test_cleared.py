"""Who a /kill's clearing is told to, and how (`tomori.turns.cleared`); the cog's telling is
tests/cog/test_chat.py's."""

from __future__ import annotations

from tomori.cast.scenes import Scene
from tomori.delivery.notices import NAMED_AT_MOST, cleared_by_kill
from tomori.locks import Trigger
from tomori.turns import DIRECTLY, PASSIVELY, TurnRequest
from tomori.turns.cleared import REPLIED_AT_MOST, ClearedAskers, cleared_askers


def asked(member: str, message: int | None, request: TurnRequest = DIRECTLY) -> Trigger:
    return request.trigger("1", None if message is None else str(message), member)


def test_each_member_who_asked_directly_hears_once_by_a_reply_to_their_newest() -> None:
    cleared = [asked("alice", 12), asked("bob", 11), asked("alice", 10), asked("carol", 13)]
    assert cleared_askers(cleared) == ClearedAskers(replied=("12", "11", "13"))


def test_a_message_the_channel_would_have_answered_on_its_own_is_not_told() -> None:
    assert cleared_askers([asked("alice", 10, PASSIVELY)]) == ClearedAskers()
    assert cleared_askers([]) == ClearedAskers()


def test_past_the_replies_or_an_ask_with_no_message_one_notice_names_them_all() -> None:
    many = [asked(f"m{n}", 10 + n) for n in range(REPLIED_AT_MOST + 1)]
    assert cleared_askers(many) == ClearedAskers(named=tuple(f"m{n}" for n in range(4)))
    scene = TurnRequest(scene=Scene(("aria", "bex"), 2))
    assert cleared_askers([asked("alice", 10), asked("bob", None, scene)]) == ClearedAskers(
        named=("alice", "bob")
    )


def test_a_notice_names_a_bounded_number_and_counts_the_rest() -> None:
    members = [str(n) for n in range(NAMED_AT_MOST + 5)]
    description = cleared_by_kill(members).description
    assert description.count("<@") == NAMED_AT_MOST
    assert "and 5 more asked" in description
