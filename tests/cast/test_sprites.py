"""Sprites in the store, on each engine, and the rules a label follows."""

from __future__ import annotations

import pytest

from tests.support.databases import DatabaseUnderTest
from tomori.cast.personas import Persona, PersonaStore
from tomori.cast.sprites import MAX_SPRITES, Sprite, check_label, instructions, wardrobe
from tomori.config.settings import ConfigError
from tomori.monitoring.metrics import Metrics
from tomori.monitoring.status import describe, server_status

HAPPY = "https://x.example/happy.png"


async def test_the_store_keeps_each_personas_sprites_by_label_whatever_its_case(
    database: DatabaseUnderTest,
) -> None:
    db = await database.open()
    store = PersonaStore(db)
    aria = Persona("Aria", "You are Aria.")
    assert await store.add("g1", aria)
    assert await store.add_sprite("g1", aria, Sprite("Happy", HAPPY))
    assert await store.add_sprite("g1", aria, Sprite("wet", "https://x.example/wet.png"))
    assert await store.add_sprite("g1", aria, Sprite("happy", "https://x.example/new.png"))
    found = await store.get("g1", "aria")
    assert found is not None
    assert found.sprites == (
        Sprite("happy", "https://x.example/new.png"),  # the label's image replaced
        Sprite("wet", "https://x.example/wet.png"),
    )
    assert await store.replace("g1", Persona("Aria", "Now a poet."))  # an edit keeps them
    assert [s.label for s in (await store.of_server("g1"))[0].sprites] == ["happy", "wet"]
    for n in range(MAX_SPRITES - 2):
        assert await store.add_sprite("g1", aria, Sprite(f"s{n}", HAPPY))
    assert not await store.add_sprite("g1", aria, Sprite("one too many", HAPPY))
    assert await store.add_sprite("g1", aria, Sprite("WET", HAPPY))  # a new image: allowed
    assert await store.remove_sprite("g1", aria, "  Wet ")
    assert not await store.remove_sprite("g1", aria, "wet")
    assert await store.remove("g1", "aria")
    assert await store.add("g1", aria)
    assert (await store.of_server("g1"))[0].sprites == ()  # gone with the persona

    metrics = Metrics(db)
    metrics.record_sprites("g1", ["Aria (wet)", "Aria (happy)", "Aria (wet)"])
    metrics.record_sprites("g2", ["Bo (x)"])
    await metrics.flushed()
    status = await server_status(db, "g1")
    assert "Sprites shown: 3 (Aria (wet) 2, Aria (happy) 1)" in describe(status)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("", "empty"),
        ("a" * 33, "at most 32"),
        ("so (sad)", 'cannot hold "("'),
        ("a:b", 'cannot hold ":"'),
        ("Discord mod", "does not allow"),
        ("x" * 30, "Discord shows at most 80"),  # with a name of 50 characters
        ("rtl\u202eX", "invisible"),  # would show "Aria (rtlX)" reversed
        ("x\x1b[31my", "invisible"),
    ],
)
def test_a_label_fits_its_marker_and_the_name_discord_shows(raw: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why.replace("(", r"\(")):
        check_label("N" * 50, raw)


def test_a_label_is_kept_with_single_spaces() -> None:
    assert check_label("Aria", "  very   wet ") == "very wet"


def test_the_model_is_told_the_labels_and_how_to_switch_and_a_persona_without_none() -> None:
    told = instructions("Aria", [Sprite("happy", HAPPY), Sprite("wet", HAPPY)])
    assert "happy, wet" in told
    assert '"Aria (label):"' in told
    assert '"Aria:"' in told
    assert instructions("Aria", []) == ""
    assert wardrobe("Aria", [], lambda label: None) is None
