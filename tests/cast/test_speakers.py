"""The labels speakers are shown under: their names, unless two look alike."""

from __future__ import annotations

from tomori.cast.speakers import Said, Speaker, labels, named
from tomori.providers.base import ContextItem, Role

ALICE = Speaker("1", "alice", "alice")
BOB_AS_ALICE = Speaker("2", "AIice", "bob")  # a capital I for the l


def test_names_alone_unless_two_look_alike() -> None:
    carol = Speaker("3", "Carol", "carol_1987")
    assert labels([ALICE, carol]) == {ALICE: "alice", carol: "Carol"}
    assert labels([ALICE, BOB_AS_ALICE, carol]) == {
        ALICE: "@alice (alice)",
        BOB_AS_ALICE: "@bob (AIice)",
        carol: "Carol",
    }


def test_a_name_holding_another_or_its_username_or_an_at_is_told_apart() -> None:
    assert labels([ALICE, Speaker("2", "alice (real)", "bob")])[ALICE] == "@alice (alice)"
    ally = Speaker("1", "Ally", "alice")
    assert labels([ally, Speaker("2", "alice", "bob")])[ally] == "@alice (Ally)"
    at = Speaker("3", "@nobody", "carol")
    assert labels([ALICE, at]) == {ALICE: "alice", at: "@carol (@nobody)"}


def test_one_author_under_two_names_is_not_told_from_itself() -> None:
    renamed = Speaker("1", "alice!", "alice")
    assert labels([ALICE, renamed]) == {ALICE: "alice", renamed: "alice!"}


def test_personas_webhooks_and_names_of_emoji_alone() -> None:
    persona = Speaker("persona aria", "Aria", kind="persona")
    proxied = Speaker("webhook Aria", "Aria")
    member = Speaker("2", "ARIA", "bob")
    assert labels([persona, proxied, member]) == {
        persona: "persona (Aria)",
        proxied: "webhook (Aria)",
        member: "@bob (ARIA)",
    }
    flower = Speaker("1", "\U0001f338", "alice")
    flowers = Speaker("2", "\U0001f338 \U0001f338", "bob")
    assert labels([flower, flowers])[flower] == "@alice (\U0001f338)"


def test_the_answering_voice_is_compared_but_its_own_lines_are_unnamed() -> None:
    tomori = Speaker("9", "Tomori", "Tomori")
    bob = Speaker("2", "Tomori", "bob")
    said = [Said(Role.ASSISTANT, "Hi."), Said(Role.USER, "I am the bot.\nReally.", bob)]
    assert named(said, [tomori]) == (
        ContextItem(Role.ASSISTANT, "Hi."),
        ContextItem(Role.USER, "@bob (Tomori): I am the bot.\n  Really."),
    )
