"""Sprites through the cog, on both libraries, against the faithful Discord REST server: an
admin gives a persona labelled avatars with `/tomori sprite add`; a line of its answer that
starts `Name (label):` is posted, without the marker, as its own webhook message with that
sprite's avatar and the name `Name (label)`; `Name:` goes back to its own; a label it does not
have is text; `/tomori status` counts the sprites shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cog.test_personas import settle
from tests.support.discord_rest import DiscordRestServer
from tests.support.llm_server import LLMServer
from tests.support.personas import reading_over_rest as started
from tests.support.rest_bots import OpenRestBot, conversation, posted, said
from tests.support.scripts import answer

ARIA = "https://images.example/aria.png"
HAPPY = "https://images.example/aria-happy.png"
SAD = "https://images.example/aria-sad.png"

ANSWER = (
    "Hello there.\n"
    "Aria (happy): A party!\n"
    "Aria (sad): But it rains.\n"
    "Aria (angry): not her label, so text.\n"
    "Aria: Anyway."
)


async def test_a_sprite_line_posts_with_its_avatar_under_a_name_that_shows_the_change(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path)
    bot.allow_webhooks()
    await bot.persona("add", name="Aria", prompt="You are Aria.", avatar=ARIA)
    added = said(await bot.sprite("add", persona="aria", label="happy", avatar=HAPPY))
    assert 'Aria can now show sprite "happy"' in added
    await bot.sprite("add", persona="Aria", label="Sad", avatar=SAD)
    assert "sprites: happy, Sad" in said(await bot.persona("list"))
    llm_server.script(answer(ANSWER, pieces=17), answer("Sure."))  # markers cut across chunks

    bot.say("aria, how is the party?")
    await settle(bot)
    assert [(m.username, m.content, m.avatar_url) for m in posted(discord_rest)] == [
        ("Aria", "Hello there.", ARIA),
        ("Aria (happy)", "A party!", HAPPY),
        ("Aria (Sad)", "But it rains.\nAria (angry): not her label, so text.", SAD),
        ("Aria", "Anyway.", ARIA),
    ]
    system = conversation(llm_server.requests[0])[0][1]
    assert system.startswith("You are Aria.\n\n")
    assert "happy, Sad" in system
    assert '"Aria (label):"' in system

    bot.say("aria, and now?")  # she reads her earlier answer back as she wrote it
    await settle(bot)
    earlier = [text for role, text in conversation(llm_server.requests[1]) if role == "assistant"]
    assert "Hello there.\nAria (happy): A party!\nAria (Sad): But it rains." in earlier[0]

    status = said(await bot.tomori("status"))
    assert "Sprites shown: 2 (Aria (happy) 1, Aria (Sad) 1)" in status

    assert "no longer shows" in said(await bot.sprite("remove", persona="Aria", label="SAD"))
    assert "no sprite labelled" in said(await bot.sprite("remove", persona="Aria", label="sad"))
    assert "sprites: happy;" not in said(await bot.persona("list"))
    assert "sprites: happy" in said(await bot.persona("list"))
    refused = said(await bot.sprite("add", persona="Aria", label="a:b", avatar=HAPPY))
    assert 'cannot hold ":"' in refused
    assert "no persona named" in said(await bot.sprite("add", persona="Bo", label="x", avatar=SAD))


@pytest.mark.parametrize("delivery", ["messages", "edit"])
async def test_a_model_starting_each_line_with_its_name_posts_one_message_per_sprite(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    delivery: str,
) -> None:
    """Roleplay models start their lines with their own name: a marker of the avatar already
    worn is taken out and starts no message (once, one message per line)."""
    bot = await started(open_rest_bot, llm_server, tmp_path, delivery=delivery)
    bot.allow_webhooks()
    await bot.persona("add", name="Aria", prompt="You are Aria.", avatar=ARIA)
    await bot.sprite("add", persona="Aria", label="happy", avatar=HAPPY)
    text = (
        "Aria: Hello there.\n"
        "Aria: How are you?\n"
        "Aria (happy): A party!\n"
        "Aria (happy): With cake.\n"
        "Aria: Anyway.\n"
        "aria: That is all."
    )
    llm_server.script(answer(text, pieces=13))
    bot.say("aria, talk to me")
    await settle(bot)
    assert [(m.username, m.content, m.avatar_url) for m in posted(discord_rest)] == [
        ("Aria", "Hello there.\nHow are you?", ARIA),
        ("Aria (happy)", "A party!\nWith cake.", HAPPY),
        ("Aria", "Anyway.\nThat is all.", ARIA),
    ]


async def test_without_a_webhook_a_sprite_shows_its_name_in_the_bots_message(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path)  # no Manage Webhooks
    await bot.persona("add", name="Aria", prompt="You are Aria.")
    await bot.sprite("add", persona="Aria", label="happy", avatar=HAPPY)
    llm_server.script(answer("Hi.\nAria (happy): Yay!"))
    bot.say("hi aria")
    await settle(bot)
    assert bot.contents() == ["**Aria:** Hi.", "**Aria (happy):** Yay!"]


async def test_in_edit_mode_a_sprite_ends_the_growing_message_and_starts_its_own(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, delivery="edit")
    bot.allow_webhooks()
    await bot.persona("add", name="Aria", prompt="You are Aria.", avatar=ARIA)
    await bot.sprite("add", persona="Aria", label="happy", avatar=HAPPY)
    text = "First line.\nSecond line.\nAria (happy): Third line.\nFourth line."
    llm_server.script(answer(text, pieces=8, gap=0.2))
    bot.say("aria, four lines")
    await settle(bot)
    shown = posted(discord_rest)
    assert [(m.username, m.content, m.avatar_url) for m in shown] == [
        ("Aria", "First line.\nSecond line.", ARIA),
        ("Aria (happy)", "Third line.\nFourth line.", HAPPY),
    ]
    assert discord_rest.requests_by_route["message_edit"] == 0  # edits went by the webhook
