"""Who a message calls, and the personas' store on both engines."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.databases import DatabaseUnderTest
from tomori.cast.names import check_name, check_triggers, passes_for_any, passes_for_the_bot
from tomori.cast.personas import (
    MAX_ADDRESSED,
    Persona,
    PersonaStore,
    addressed,
    drawn_in,
    name_key,
    named,
    unnamed,
)
from tomori.cast.webhook_store import StoredWebhook, WebhookStore
from tomori.config.settings import ConfigError
from tomori.store.sealed import SecretBox

CAST = (
    Persona("Aria", "a"),
    Persona("Bex", "b", triggers=("drummer", "bex")),
    Persona("Cy", "c"),
    Persona("Dot Matrix", "d"),
)

words = st.sampled_from(["aria", "ARIA", "Bex", "drummer", "cy", "dot matrix", "hi", "ariana"])


@given(st.lists(st.one_of(words, st.text(max_size=5)), max_size=12))
def test_a_message_calls_the_personas_it_names_in_order_at_most_three(parts: list[str]) -> None:
    text = " ".join(parts)
    called = addressed(CAST, text)
    assert len(called) <= MAX_ADDRESSED
    assert len({p.key for p in called}) == len(called)
    places = []
    for persona in called:
        found = [
            m.start()
            for w in persona.words
            for m in re.finditer(rf"(?<!\w){re.escape(w)}(?!\w)", text, re.IGNORECASE)
        ]
        assert found, f"{persona.name} was not named in {text!r}"
        places.append(min(found))
    assert places == sorted(places)
    uncalled = [p for p in CAST if p not in called]
    if len(called) < MAX_ADDRESSED:  # none named was left out
        assert all(addressed([p], text) == () for p in uncalled)


def test_whole_words_only_and_the_reply_first() -> None:
    assert addressed(CAST, "ariana and cyan") == ()
    assert [p.name for p in addressed(CAST, "Hey CY, and aria!")] == ["Cy", "Aria"]
    assert [p.name for p in addressed(CAST, "the drummer")] == ["Bex"]
    assert addressed(CAST, "Bex's turn")[0].name == "Bex"  # its own trigger says "bex"
    replied = addressed(CAST, "and aria?", replied_to="dot matrix")
    assert [p.name for p in replied] == ["Dot Matrix", "Aria"]
    assert drawn_in(CAST, "Over to you, Aria. Cy?", CAST[0]) == CAST[2]  # never itself


def test_names_follow_discords_rules_for_a_webhooks_name() -> None:
    assert check_name("  Aria   the  Bard ") == "Aria the Bard"
    for bad in ("", "x" * 81, "everyone", "Discord Dan", "clydesdale", "a@b", "a:b"):
        with pytest.raises(ConfigError):
            check_name(bad)
    assert check_triggers("bard, Bard ,singer,,") == ("bard", "singer")
    assert unnamed("Aria", named("Aria", "Hi")) == "Hi"
    assert unnamed("Aria", "**Bex:** Hi") == "**Bex:** Hi"


def test_a_name_typed_with_combining_accents_is_the_same_name_and_invisible_ones_are_refused() -> (
    None
):
    composed, combining = "Zo\u00eb", "Zoe\u0308"
    assert check_name(combining) == composed
    assert name_key(check_name(combining)) == name_key(check_name(composed))
    zoe = Persona(check_name(composed), "You are Zoë.")
    assert addressed([zoe], f"hi {combining}, how are you?") == (zoe,)
    for hidden in ("Ar\u200bia", "Aria\u202e", "Ar\x07ia"):
        with pytest.raises(ConfigError, match="invisible"):
            check_name(hidden)
        with pytest.raises(ConfigError, match="invisible"):
            check_triggers(f"bard, {hidden}")


def test_a_name_spelt_in_look_alike_letters_is_the_name_it_looks_like() -> None:
    clyde = "\uff23\uff4c\u0443d\u0435"  # full-width C and l, Cyrillic y and e
    for disguised in (clyde, "D i s c o r d fan", "c.l.y.d.e", "h.e.r.e"):
        with pytest.raises(ConfigError):
            check_name(disguised)
    assert passes_for_the_bot("T0m0ri", "Tomori")
    assert passes_for_the_bot("\u0422omori", "tomori")  # a Cyrillic T
    assert not passes_for_the_bot("Tomoko", "Tomori")
    assert passes_for_any("AIice", ["alice"])  # a capital I reads as an l
    assert passes_for_any("DISCORD", ["discord"])  # so i and l are one letter, whatever case
    with pytest.raises(ConfigError):
        check_name("DISCORD")


def test_a_name_holds_no_comma_which_would_split_it_in_a_scenes_list() -> None:
    with pytest.raises(ConfigError, match="comma"):
        check_name("A, B")


async def test_the_store_keeps_personas_who_posted_what_and_each_channels_webhook(
    database: DatabaseUnderTest,
) -> None:
    db = await database.open()
    store, webhooks = PersonaStore(db), WebhookStore(db, SecretBox("the bot's token"))
    aria = Persona(
        "Aria", "You are Aria.", "https://x.example/a.png", ("bard",), "openai:m", prefill="*bows*"
    )
    assert await store.add("g1", aria)
    assert not await store.add("g1", Persona("ARIA", "again"))  # unique whatever its case
    assert await store.add("g2", Persona("aria", "another server's"))
    assert await store.of_server("g1") == (aria,)
    assert await store.get("g1", "aria") == aria
    edited = Persona("Aria", "Now a poet.", None, (), None)  # its prefill cleared too
    assert await store.replace("g1", edited)
    assert await store.of_server("g1") == (edited,)
    await store.posted("g1", "c1", edited, ["10", "11"])
    await store.posted("g1", "c1", edited, ["11"])  # recorded twice: kept once
    assert await store.posters(["10", "11", "12"]) == {"10": "aria", "11": "aria"}
    assert await store.remove("g1", "ARIA")
    assert not await store.remove("g1", "aria")
    assert await store.of_server("g1") == ()

    assert await webhooks.of_channel("c1") is None
    await webhooks.keep("c1", StoredWebhook("w1", "t1"))
    await webhooks.keep("c1", StoredWebhook("w2", "t2"))  # created anew: replaces the old
    assert await webhooks.of_channel("c1") == StoredWebhook("w2", "t2")
    assert await webhooks.ids(["w1", "w2", "w3"]) == {"w2"}
    await webhooks.forget("c1", "w1")  # another process's replacement is not forgotten
    assert await webhooks.of_channel("c1") == StoredWebhook("w2", "t2")
    await webhooks.forget("c1", "w2")
    assert await webhooks.of_channel("c1") is None


async def test_a_webhooks_token_rests_sealed_and_one_stored_in_clear_is_sealed(
    database: DatabaseUnderTest,
) -> None:
    """A copy of the database is no key to post in the bot's channels."""
    db = await database.open()
    webhooks = WebhookStore(db, SecretBox("the bot's token"))
    await webhooks.keep("c1", StoredWebhook("w1", "secret-token-1"))
    await db.execute(  # as an earlier version stored one
        "INSERT INTO channel_webhooks (channel_id, webhook_id, token, created_at)"
        " VALUES ('c2', 'w2', 'secret-token-2', 0)"
    )
    assert await webhooks.seal_all() == 1
    rows = await db.fetchall("SELECT token FROM channel_webhooks")
    assert all(row["token"].startswith("sealed:v1:") for row in rows)
    assert "secret-token" not in str([row["token"] for row in rows])
    assert await webhooks.of_channel("c2") == StoredWebhook("w2", "secret-token-2")
    reset = WebhookStore(db, SecretBox("the bot's new token"))  # the bot's token was reset
    assert await reset.of_channel("c1") is None  # a new webhook is made, nothing fails
