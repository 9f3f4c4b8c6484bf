"""The limits that protect a server, through a real nextcord bot: a user's cooldown and daily
tokens (on SQLite and PostgreSQL), bot loops, and channels the bot cannot post in. Each refusal
is proven by the local LLM server never seeing the request; time is moved by rewriting the
stored rows, as another day or a later minute would find them."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nextcord
import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer, Reply, sse
from tests.support.nextcord_fake import (
    BOB,
    BOT_ID,
    CHANNEL_ID,
    GUILD_ID,
    NextcordBot,
    OpenNextcord,
    deny_send,
    discord_error,
    member_payload,
)
from tests.support.openai_wire import chunk
from tests.support.scripts import answer
from tomori.delivery.notices import cooldown_notice, quota_notice
from tomori_cog.listener.deliverability import REFUSED_FOR_S

OTHER_BOT = 5_000_000_000_000_000_005
SHORT = {
    "stream_first_token_timeout_ms": 2_000,
    "stream_sdk_call_timeout_ms": 2_000,
    "stream_abandoned_settle_timeout_ms": 100,
    "typing_keepalive_interval_ms": 50,
}
SLOW_DOWN = cooldown_notice(0).title
DAILY_LIMIT = quota_notice(0).title


async def test_limits_that_cannot_be_read_let_messages_on_and_are_not_asked_each_time(
    database: DatabaseUnderTest,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    caplog: pytest.LogCaptureFixture,
) -> None:
    nc = await open_nextcord(
        database.settings(**SHORT, user_cooldown_ms=60_000), chain_for(llm_server)
    )
    llm_server.script(answer("First."), answer("One."), answer("Two."))
    nc.say(f"{nc.mention()} hello")  # the store opens
    await nc.settled()
    await database.execute("DROP TABLE user_limits")  # a broken store: every read fails
    with caplog.at_level(logging.WARNING, logger="tomori_cog.listener.gate"):
        nc.say(f"{nc.mention()} one", author=BOB, name="bob")
        await nc.settled()
        nc.say(f"{nc.mention()} two", author=BOB, name="bob")
        await nc.settled()
    assert nc.discord.contents() == ["First.", "One.", "Two."]  # Bob's second: not held either
    unreadable = [r for r in caplog.records if "could not read the limits" in r.getMessage()]
    assert len(unreadable) == 1  # the second message did not wait on the store again


async def test_inside_the_cooldown_no_model_is_asked_and_the_user_is_told_once(
    database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(
        database.settings(**SHORT, user_cooldown_ms=60_000), chain_for(llm_server)
    )
    llm_server.script(answer("First."), answer("For Bob."), answer("A minute later."))
    nc.say(f"{nc.mention()} one")
    await nc.settled()
    refused = nc.say(f"{nc.mention()} two")
    await nc.settled()
    nc.say(f"{nc.mention()} three")
    await nc.settled()
    assert len(llm_server.requests) == 1
    assert nc.discord.embeds() == [SLOW_DOWN]  # once for the window, not once a message
    notice = nc.discord.messages[CHANNEL_ID][-2]
    assert "<t:" in notice["embeds"][0]["description"]  # when to try again, in the reader's time
    assert str(notice["message_reference"]["message_id"]) == refused["id"]  # whom it is for
    nc.say(f"{nc.mention()} hello", author=BOB, name="bob")  # each user has their own
    await nc.settled()
    assert len(llm_server.requests) == 2
    await database.execute("UPDATE user_limits SET admitted_at = admitted_at - 61")
    nc.say(f"{nc.mention()} four")
    await nc.settled()
    assert nc.discord.contents() == ["First.", "For Bob.", "A minute later."]
    assert nc.discord.embeds() == [SLOW_DOWN]


async def test_an_autoreply_message_inside_the_cooldown_is_refused_silently(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = settings_for(tmp_path, user_cooldown_ms=60_000, channels=frozenset({CHANNEL_ID}))
    nc = await open_nextcord(settings, chain_for(llm_server))
    llm_server.script(answer("Hi."))
    nc.say("one")
    await nc.settled()
    with caplog.at_level(logging.INFO, logger="tomori_cog.listener.gate"):
        nc.say("two")
        await nc.settled()
    assert len(llm_server.requests) == 1
    assert nc.discord.embeds() == []
    assert any("over the cooldown" in record.getMessage() for record in caplog.records)
    nc.say(f"{nc.mention()} three")  # asked directly, it is told: the silent refusal told no one
    await nc.settled()
    assert nc.discord.embeds() == [SLOW_DOWN]


async def test_over_the_daily_tokens_no_model_is_asked_until_the_utc_day_resets(
    database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(
        database.settings(**SHORT, user_daily_tokens=14), chain_for(llm_server)
    )
    llm_server.script(answer("Sixteen characters"), answer("For Bob."), answer("A new day."))
    nc.say(f"{nc.mention()} one")  # 10 tokens in, 4 out: the day's 14 are spent
    await nc.settled()
    nc.say(f"{nc.mention()} two")
    await nc.settled()
    nc.say(f"{nc.mention()} three")
    await nc.settled()
    assert len(llm_server.requests) == 1
    assert nc.discord.embeds() == [DAILY_LIMIT]
    said = nc.discord.messages[CHANNEL_ID][-2]["embeds"][0]["description"]
    assert "00:00 UTC" in said
    nc.say(f"{nc.mention()} hello", author=BOB, name="bob")
    await nc.settled()
    assert len(llm_server.requests) == 2
    await nc.service.metrics.flushed()  # type: ignore[union-attr]
    day = 86_400
    await database.execute("UPDATE token_usage SET recorded_at = recorded_at - ?", (day,))
    await database.execute("UPDATE user_limits SET quota_noticed_at = quota_noticed_at - ?", (day,))
    nc.say(f"{nc.mention()} four")
    await nc.settled()
    assert nc.discord.contents() == ["Sixteen characters", "For Bob.", "A new day."]
    assert nc.discord.embeds() == [DAILY_LIMIT]


async def test_a_provider_that_reports_no_usage_is_counted_by_its_characters(
    database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(
        database.settings(**SHORT, user_daily_tokens=100), chain_for(llm_server)
    )
    long = "word " * 80  # 400 characters: 100 tokens
    llm_server.script(
        Reply(body=[sse(chunk(long)), sse(chunk(finish="stop")), sse("[DONE]")]),
    )
    nc.say(f"{nc.mention()} talk a lot")
    await nc.settled()
    nc.say(f"{nc.mention()} more")
    await nc.settled()
    assert len(llm_server.requests) == 1
    assert nc.discord.embeds() == [DAILY_LIMIT]
    rows = await database.rows("SELECT input_tokens, output_tokens, guild_id FROM token_usage")
    assert len(rows) == 1
    assert rows[0][0] > 0
    assert rows[0][1:] == (100, str(GUILD_ID))


async def test_a_queued_message_is_refused_when_the_turn_before_it_spent_the_day(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(settings_for(tmp_path, user_daily_tokens=14), chain_for(llm_server))
    llm_server.script(answer("Sixteen characters", gap=0.05), answer("Never sent."))
    nc.say(f"{nc.mention()} one")
    nc.say(f"{nc.mention()} two")  # admitted while the first is still answering: queued
    await nc.settled()
    assert len(llm_server.requests) == 1
    assert nc.discord.contents() == ["Sixteen characters"]
    assert nc.discord.embeds() == [DAILY_LIMIT]


async def test_bots_start_at_most_max_bot_turns_in_a_row_until_a_human_speaks(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    settings = settings_for(tmp_path, reply_to_bots=True, max_bot_turns=2)
    nc = await open_nextcord(settings, chain_for(llm_server))
    llm_server.script(*[answer("Beep.")] * 5)
    for _ in range(4):
        nc.say(f"{nc.mention()} beep", author=OTHER_BOT, name="otherbot", bot=True)
        await nc.settled()
    assert len(llm_server.requests) == 2
    nc.say("you two, calm down", author=BOB, name="bob")  # a human, not even asking the bot
    await nc.settled()
    nc.say(f"{nc.mention()} beep", author=OTHER_BOT, name="otherbot", bot=True)
    await nc.settled()
    assert len(llm_server.requests) == 3


def time_out_the_bot(nc: NextcordBot) -> None:
    until = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    payload = {**member_payload(BOT_ID, "Tomori", bot=True), "guild_id": str(GUILD_ID)}
    payload["communication_disabled_until"] = until
    nc.bot._connection.parse_guild_member_update(payload)


@pytest.mark.parametrize(
    ("take_away", "logged"),
    [
        (lambda nc: deny_send(nc, 1 << 11), "no send_messages permission"),
        (lambda nc: deny_send(nc, 1 << 14), "no embed_links permission"),
        (time_out_the_bot, "timed out"),
    ],
    ids=["send-messages", "embed-links", "timed-out"],
)
async def test_a_channel_the_bot_cannot_post_in_gets_no_model_call(
    nc: NextcordBot,
    llm_server: LLMServer,
    caplog: pytest.LogCaptureFixture,
    take_away: object,
    logged: str,
) -> None:
    take_away(nc)  # type: ignore[operator]
    llm_server.script(*[answer("Nobody would see this.")] * 2)
    with caplog.at_level(logging.WARNING, logger="tomori_cog.listener.deliverability"):
        nc.say(f"{nc.mention()} hello")
        nc.say(f"{nc.mention()} hello?")
        await nc.settled()
    assert llm_server.requests == []
    assert nc.discord.sent == []
    lines = [
        r.getMessage() for r in caplog.records if r.name == "tomori_cog.listener.deliverability"
    ]
    assert len(lines) == 1  # one line, not one per message
    assert logged in lines[0]


@pytest.fixture
async def nc(tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord) -> NextcordBot:
    return await open_nextcord(settings_for(tmp_path), chain_for(llm_server))


async def test_a_channel_that_refused_a_send_is_left_alone_for_ten_minutes(
    nc: NextcordBot, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc.discord.fail_sends = lambda body: discord_error(
        nextcord.Forbidden, 403, 50001, "Missing Access"
    )
    llm_server.script(*[answer("You will not see this.")] * 4)
    with caplog.at_level(logging.INFO):
        nc.say(f"{nc.mention()} hello")
        await nc.settled()
        remembered = [r for r in caplog.records if r.name == "tomori_cog.listener.deliverability"]
        caplog.clear()
        nc.say(f"{nc.mention()} hello?")
        nc.say(f"{nc.mention()} anyone?")
        await nc.settled()
    assert len(llm_server.requests) == 1  # the first found out; the others cost nothing
    assert len(remembered) == 1
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    nc.discord.fail_sends = lambda body: None
    gate = nc.service._gate.deliverability
    later = gate.clock() + REFUSED_FOR_S + 1
    gate.clock = lambda: later
    nc.say(f"{nc.mention()} and now?")
    await nc.settled()
    assert nc.discord.contents() == ["You will not see this."]
    assert len(llm_server.requests) == 2
