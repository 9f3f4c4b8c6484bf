"""The rules of a scene without Discord: which scenes are refused and why, the order of its
lines, what survives a trip through the lock's queue, and what each persona is told."""

from __future__ import annotations

import pytest

from tomori.cast.personas import Persona
from tomori.cast.scenes import Scene, cast_scene, heard, named_in, speaker_notice
from tomori.config.parsers import ConfigError
from tomori.providers.base import ContextItem, Role

CAST = (Persona("Aria", "a"), Persona("Bex", "b"), Persona("Old Cy", "c"), Persona("Dot", "d"))


def test_names_are_comma_separated_or_words() -> None:
    assert named_in("Aria, Old  Cy ,") == ["Aria", "Old Cy"]
    assert named_in("aria bex") == ["aria", "bex"]


def test_a_scene_keeps_the_order_named_whatever_the_case() -> None:
    scene = cast_scene("bex, ARIA", 2, "  at the  tavern ", CAST)
    assert scene == Scene(("bex", "aria"), 2, "at the tavern")
    assert scene.lines() == [(1, "bex"), (1, "aria"), (2, "bex"), (2, "aria")]


@pytest.mark.parametrize(
    ("names", "cycles", "why"),
    [
        ("Aria", 2, "2 or 3 personas"),
        ("Aria, Bex, Old Cy, Dot", 2, "2 or 3 personas"),
        ("Aria, Zed", 2, "no persona named Zed"),
        ("Aria, aria", 2, "once"),
        ("Aria, Bex", 0, "from 1 to 10"),
        ("Aria, Bex", 11, "from 1 to 10"),
    ],
)
def test_a_bad_scene_is_refused_with_why(names: str, cycles: int, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        cast_scene(names, cycles, None, CAST)


def test_too_long_instructions_are_refused() -> None:
    with pytest.raises(ConfigError, match="at most 1000"):
        cast_scene("Aria, Bex", 1, "x" * 1_001, CAST)


def test_each_persona_is_told_its_line_and_hears_the_others_by_name() -> None:
    scene = Scene(("aria", "bex"), 3, "a duel")
    told = speaker_notice(scene, CAST[1], 2, {"aria": "Aria", "bex": "Bex"})
    assert told.role is Role.USER
    assert told.text.startswith("[Scene, cycle 2 of 3] You are Bex, in a scene with Aria.")
    assert "Write only Bex's next message" in told.text
    assert "The scene: a duel" in told.text
    said = [(CAST[0], "Hi."), (CAST[1], "Yo."), (CAST[0], "  ")]
    assert heard(said, CAST[1]) == (
        ContextItem(Role.USER, "Aria: Hi."),
        ContextItem(Role.ASSISTANT, "Yo."),
    )
