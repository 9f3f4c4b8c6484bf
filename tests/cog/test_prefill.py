"""Prefill through the cog, on both libraries, against the faithful Discord REST server: an admin
sets one with `/tomori prefill set`, and `/respond` gives one for a single answer. The posted
answer begins with it exactly once; the scripted model server shows how each model was sent it
(a trailing assistant turn, or an instruction where the model takes none natively)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import DiscordRestServer, new_snowflake
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import (
    MANAGE_GUILD,
    OpenRestBot,
    RestBot,
    conversation,
    posted,
    said,
)
from tests.support.scripts import answer, stalled_after
from tests.support.world import CHANNEL_ID

YAWNS = "Tomori: *yawns*"
GRINS = "Tomori: *grins*"
INSTRUCTION = "Begin your next reply with: "


async def started(
    open_rest_bot: OpenRestBot, llm: LLMServer, tmp_path: Path, models: str
) -> RestBot:
    settings = settings_for(tmp_path, history_memory_channels=0)
    return await open_rest_bot(settings, chain_for(llm, models))


async def prefill(bot: RestBot, subcommand: str, **options: str) -> str:
    """An admin runs `/tomori prefill <subcommand>`; what they are told."""
    given = [{"name": n, "type": 3, "value": v} for n, v in options.items()]
    group = {
        "name": "prefill",
        "type": 2,
        "options": [{"name": subcommand, "type": 1, "options": given}],
    }
    data = {"id": str(new_snowflake()), "name": "tomori", "type": 1, "options": [group]}
    return said(await bot.command(data, permissions=MANAGE_GUILD))


async def respond(bot: RestBot, **options: str) -> str:
    """An admin runs `/respond` with `options`; what they are told at once."""
    given = [{"name": n, "type": 3, "value": v} for n, v in options.items()]
    data = {"id": str(new_snowflake()), "name": "respond", "type": 1, "options": given}
    return said(await bot.command(data, permissions=MANAGE_GUILD))


async def asked(bot: RestBot, text: str) -> None:
    bot.say(f"{bot.mention()} {text}")
    async with asyncio.timeout(10):
        await bot.settled(CHANNEL_ID)


async def test_a_server_prefill_begins_each_answer_once_sent_natively_as_the_last_turn(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, "openai:test-model")
    assert f"> {YAWNS}" in await prefill(bot, "set", text=f"  {YAWNS} ", scope="server")
    # the model goes on after the prefill, then writes it again first: posted once either way
    llm_server.script(answer(" Good morning."), answer(f"{YAWNS} Good night.", pieces=12))
    await asked(bot, "morning!")
    await asked(bot, "night!")
    assert [m.content for m in posted(discord_rest)] == [
        f"{YAWNS} Good morning.",
        f"{YAWNS} Good night.",
    ]
    for request in llm_server.requests:
        sent = conversation(request)
        assert sent[-1] == ("assistant", YAWNS)  # last: the model goes on from it
        assert sent[-2][0] == "user"
        assert not any(INSTRUCTION in content for _, content in sent)
    shown = said(await bot.command(show_data(), permissions=MANAGE_GUILD))
    assert f"Prefill, what answers begin with (this server):\n> {YAWNS}" in shown
    assert await prefill(bot, "reset", scope="server") == "Cleared the prefill of this server."
    llm_server.script(answer("Plain again."))
    await asked(bot, "and now?")
    assert posted(discord_rest)[-1].content == "Plain again."
    assert conversation(llm_server.requests[-1])[-1][0] == "user"


def show_data() -> dict[str, Any]:
    show = {"name": "show", "type": 1, "options": []}
    return {"id": str(new_snowflake()), "name": "tomori", "type": 1, "options": [show]}


async def test_respond_answers_now_with_its_own_prefill_in_place_of_the_servers(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, "openai:test-model")
    await prefill(bot, "set", text=YAWNS, scope="server")
    bot.say("what a day")  # the channel's last message: no mention, nothing answers it
    llm_server.script(answer(" A joke? Fine."))
    told = await respond(bot, prompt="tell a joke", prefill=GRINS)
    assert told == "The answer comes in this channel, after any before it."
    async with asyncio.timeout(10):
        await bot.settled(CHANNEL_ID)
    [shown] = posted(discord_rest)
    assert shown.content == f"{GRINS} A joke? Fine."
    assert "message_reference" not in shown.payload  # free-standing: it answers no message
    sent = conversation(llm_server.requests[0])
    assert sent[-1] == ("assistant", GRINS)  # the server's is replaced, never joined
    assert sent[-2][0] == "user"
    assert sent[-2][1].endswith("what a day\nalice: tell a joke")
    assert not any(YAWNS in content for _, content in sent)


async def test_a_model_without_native_prefill_gets_a_manual_one_in_words_and_no_servers_one(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, "openai:test-model+noprefill")
    await prefill(bot, "set", text=YAWNS)
    llm_server.script(answer("Hello there."), answer(f"{GRINS} Told you so."))
    with caplog.at_level(logging.WARNING, logger="tomori.generation.chain"):
        await asked(bot, "hi")
    assert "prefill is not sent to model openai:test-model" in caplog.text
    first = conversation(llm_server.requests[0])
    assert first[-1][0] == "user"
    assert not any(YAWNS in content or INSTRUCTION in content for _, content in first)
    await respond(bot, prefill=GRINS)
    async with asyncio.timeout(10):
        await bot.settled(CHANNEL_ID)
    second = conversation(llm_server.requests[1])
    assert second[-1][0] == "user"
    assert second[-1][1].endswith(
        f'Begin your next reply with: "{GRINS}". Continue directly after it without repeating '
        "the prefix."
    )
    assert [m.content for m in posted(discord_rest)] == ["Hello there.", f"{GRINS} Told you so."]


async def test_respond_as_a_persona_is_told_at_once_and_answers_after_the_turn_before_it(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, "openai:test-model")
    bot.allow_webhooks()
    await bot.persona("add", name="Aria", prompt="You are Aria, a bard.")
    bows = "Aria: *bows*"
    llm_server.script(answer("Slowly, slowly.", pieces=4, gap=0.4), answer(" A song!"))
    bot.say(f"{bot.mention()} take your time")
    async with asyncio.timeout(5):
        while not llm_server.requests:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    told = await respond(bot, persona="aria", prompt="sing", prefill=bows)
    assert told == "The answer comes in this channel, after any before it."
    assert not posted(discord_rest) or posted(discord_rest)[-1].content != f"{bows} A song!"
    async with asyncio.timeout(10):
        await bot.settled(CHANNEL_ID)
    assert [(m.username, m.content) for m in posted(discord_rest)] == [
        ("Tomori", "Slowly, slowly."),
        ("Aria", f"{bows} A song!"),
    ]
    sent = conversation(llm_server.requests[1])
    assert sent[0] == ("system", "You are Aria, a bard.")
    assert sent[-1] == ("assistant", bows)


async def test_respond_is_held_to_the_authors_server_budget_as_a_message_is(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """An admin is a member too: past the day's budget the author set for each server, their
    /respond asks no model (anyone can create a server and be its admin)."""
    settings = settings_for(tmp_path, history_memory_channels=0, server_daily_tokens=14)
    bot = await open_rest_bot(settings, chain_for(llm_server))
    llm_server.script(answer("A long enough answer to spend the day."))
    await asked(bot, "spend it")
    for n in range(3):
        told = await respond(bot, prompt=f"write an essay {n}")
        assert told.startswith("This server has used the tokens it has for today.")
    await bot.settled(CHANNEL_ID)
    assert len(llm_server.requests) == 1


async def test_respond_past_the_members_queue_is_told_the_queue_is_full(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path, history_memory_channels=0, queue_per_member=1)
    bot = await open_rest_bot(settings, chain_for(llm_server))
    llm_server.script(stalled_after("Thinking..."))
    bot.say(f"{bot.mention()} a long one")
    async with asyncio.timeout(10):
        while not llm_server.requests:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    assert (
        await respond(bot, prompt="one") == "The answer comes in this channel, after any before it."
    )
    full = await respond(bot, prompt="two")
    assert full.startswith("You have as many messages waiting")
    await bot.kill(permissions=1 << 13)
    await bot.settled(CHANNEL_ID)
