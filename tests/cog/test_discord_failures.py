"""Discord failing in the middle of an answer, through the cog, on both libraries, against the
faithful Discord REST server: a request Discord answered with a 5xx (having done what it asked,
or not: the answer does not say) is asked once more without risk of a duplicate, an edit that
cannot land goes on in a new message, and a persona whose webhook was deleted goes on speaking.
The channel ends with every part of the answer, each once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cog.test_personas import settle
from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import DiscordRestServer
from tests.support.llm_server import LLMServer
from tests.support.personas import reading_over_rest as started
from tests.support.rest_bots import OpenRestBot, posted
from tests.support.scripts import answer, in_parts
from tests.support.waiting import until
from tests.support.world import CHANNEL_ID

PARAGRAPHS = [f"Paragraph {n}: the part of the answer numbered {n}." for n in range(12)]
CARRIED_OUT = pytest.mark.parametrize(
    "landed", [False, True], ids=["not-carried-out", "carried-out"]
)


def paragraphs_in(contents: list[str]) -> list[str]:
    """The paragraphs the channel shows, in order, however the messages cut them."""
    return [part.strip() for text in contents for part in text.split("\n\n") if part.strip()]


@CARRIED_OUT
@pytest.mark.parametrize("status", [503, None], ids=["503", "connection-dropped"])
async def test_a_message_discord_failed_to_create_is_asked_once_more_and_shown_once(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    landed: bool,
    status: int | None,
) -> None:
    """Asked again with the same nonce, enforced: Discord returns the message the first create
    made, if it made one."""
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    discord_rest.fail_next("message_create", status=status, landed=landed, after=1)
    llm_server.script(in_parts(*(p + "\n\n" for p in PARAGRAPHS[:3]), gap=1.2))
    bot.say(f"{bot.mention()} three things, please")
    await settle(bot)
    assert discord_rest.failed["message_create"] == 1
    assert paragraphs_in(bot.contents()) == PARAGRAPHS[:3]


@pytest.mark.parametrize("times", [1, 2], ids=["once", "twice"])
async def test_an_edit_discord_failed_loses_no_text_of_the_growing_message(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    times: int,
) -> None:
    """Failed once, the edit is asked again; failed twice, the message stays as it shows and
    the rest of the answer goes on in a new one."""
    settings = settings_for(tmp_path, delivery="edit", stream_edit_interval_ms=200)
    bot = await open_rest_bot(settings, chain_for(llm_server))
    discord_rest.fail_next("message_edit", times=times)
    llm_server.script(in_parts(*(p + "\n\n" for p in PARAGRAPHS[:4]), gap=0.4))
    bot.say(f"{bot.mention()} four things, please")
    await settle(bot)
    assert discord_rest.failed["message_edit"] == times
    assert paragraphs_in(bot.contents()) == PARAGRAPHS[:4]


async def test_a_personas_webhook_deleted_mid_answer_loses_none_of_it(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """Edit mode: the message the deleted webhook posted can no longer grow; it stays as it
    shows, and the persona goes on in a new message (through a new webhook)."""
    bot = await started(
        open_rest_bot, llm_server, tmp_path, delivery="edit", stream_edit_interval_ms=200
    )
    bot.allow_webhooks()
    await bot.persona("add", name="Aria", prompt="You are Aria.")
    llm_server.script(in_parts(*(p + "\n\n" for p in PARAGRAPHS), gap=0.15))
    bot.say("aria, twelve things please")
    await until(lambda: any(PARAGRAPHS[0] in m.content for m in posted(discord_rest)))
    (webhook,) = discord_rest.webhooks_of(CHANNEL_ID)
    discord_rest.delete_webhook(int(webhook["id"]))
    await settle(bot)
    shown = posted(discord_rest)
    assert paragraphs_in([m.content for m in shown]) == PARAGRAPHS
    assert {m.username for m in shown} == {"Aria"}


@CARRIED_OUT
async def test_a_personas_message_discord_failed_to_post_is_shown_once_under_its_name(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    landed: bool,
) -> None:
    """The connection drops under the post. Execute Webhook takes no nonce: before asking
    again, the cog looks whether the message is in the channel after all (once, it was posted
    again as the bot: twice when it had landed)."""
    bot = await started(open_rest_bot, llm_server, tmp_path)
    bot.allow_webhooks()
    await bot.persona("add", name="Aria", prompt="You are Aria.")
    discord_rest.fail_next("webhook", status=None, landed=landed, after=1)
    llm_server.script(in_parts(*(p + "\n\n" for p in PARAGRAPHS[:3]), gap=1.2))
    bot.say("aria, three things please")
    await settle(bot)
    shown = posted(discord_rest)
    assert discord_rest.failed["webhook"] == 1
    assert paragraphs_in([m.content for m in shown]) == PARAGRAPHS[:3]
    assert {m.username for m in shown} == {"Aria"}
    assert {m.webhook_id for m in shown} == {int(discord_rest.webhooks_of(CHANNEL_ID)[0]["id"])}


async def test_a_create_asked_again_still_replies_to_the_message_it_answers(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    discord_rest.fail_next("message_create", after=1)
    llm_server.script(answer("The first answer."), answer("The second answer."))
    bot.say(f"{bot.mention()} first")
    second = bot.say(f"{bot.mention()} second")  # queued: its answer replies to it
    await settle(bot)
    assert discord_rest.failed["message_create"] == 1
    shown = [(m.content, m.reply_to) for m in bot.shown()]
    assert shown == [("The first answer.", None), ("The second answer.", second)]
