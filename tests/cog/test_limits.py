"""The limits that protect a server, through a bot of each library: a user's cooldown and daily
tokens (on SQLite and PostgreSQL), bot loops, and channels the bot cannot post in. Each refusal
is proven by the local LLM server never seeing the request; time is moved by rewriting the
stored rows, as another day or a later minute would find them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer, Reply, sse
from tests.support.openai_wire import chunk
from tests.support.scripts import answer, stalled_after, tool_call
from tests.support.tomori_commands import said
from tests.support.world import CHANNEL_ID, GUILD_ID, Person
from tomori.delivery.notices import cooldown_notice, quota_notice
from tomori_cog.listener.deliverability import REFUSED_FOR_S

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
    open_bot: OpenBot,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = await open_bot(database.settings(**SHORT, user_cooldown_ms=60_000), chain_for(llm_server))
    llm_server.script(answer("First."), answer("One."), answer("Two."))
    await bot.say(f"{bot.mention()} hello")  # the store opens
    await bot.settled()
    await database.execute("DROP TABLE user_limits")  # a broken store: every read fails
    with caplog.at_level(logging.WARNING, logger="tomori_cog.listener.gate"):
        await bot.say(f"{bot.mention()} one", by=Person.BOB)
        await bot.settled()
        await bot.say(f"{bot.mention()} two", by=Person.BOB)
        await bot.settled()
    assert await bot.contents() == ["First.", "One.", "Two."]  # Bob's second: not held either
    unreadable = [r for r in caplog.records if "could not read the limits" in r.getMessage()]
    assert len(unreadable) == 1  # the second message did not wait on the store again


async def test_inside_the_cooldown_no_model_is_asked_and_the_user_is_told_once(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT, user_cooldown_ms=60_000), chain_for(llm_server))
    llm_server.script(answer("First."), answer("For Bob."), answer("A minute later."))
    await bot.say(f"{bot.mention()} one")
    await bot.settled()
    refused = await bot.say(f"{bot.mention()} two")
    await bot.settled()
    await bot.say(f"{bot.mention()} three")
    await bot.settled()
    assert len(llm_server.requests) == 1
    assert await bot.contents() == ["First."]
    assert await bot.embeds() == [SLOW_DOWN]  # once for the window, not once a message
    notice = (await bot.messages())[-1]
    assert "<t:" in notice.embeds[0]["description"]  # when to try again, in the reader's time
    assert notice.reply_to == refused.id  # whom it is for
    await bot.say(f"{bot.mention()} hello", by=Person.BOB)  # each user has their own
    await bot.settled()
    assert len(llm_server.requests) == 2
    await database.execute("UPDATE user_limits SET admitted_at = admitted_at - 61")
    await bot.say(f"{bot.mention()} four")
    await bot.settled()
    assert await bot.contents() == ["First.", "For Bob.", "A minute later."]
    assert await bot.embeds() == [SLOW_DOWN]


async def test_an_autoreply_message_inside_the_cooldown_is_refused_silently(
    tmp_path: Path,
    llm_server: LLMServer,
    open_bot: OpenBot,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = settings_for(tmp_path, user_cooldown_ms=60_000, channels=frozenset({CHANNEL_ID}))
    bot = await open_bot(settings, chain_for(llm_server))
    llm_server.script(answer("Hi."))
    await bot.say("one")
    await bot.settled()
    with caplog.at_level(logging.INFO, logger="tomori_cog.listener.gate"):
        await bot.say("two")
        await bot.settled()
    assert len(llm_server.requests) == 1
    assert await bot.embeds() == []
    assert any("over the cooldown" in record.getMessage() for record in caplog.records)
    await bot.say(
        f"{bot.mention()} three"
    )  # asked directly, it is told: the silent refusal told no one
    await bot.settled()
    assert await bot.embeds() == [SLOW_DOWN]


async def test_over_the_daily_tokens_no_model_is_asked_until_the_utc_day_resets(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT, user_daily_tokens=14), chain_for(llm_server))
    llm_server.script(answer("Sixteen characters"), answer("For Bob."), answer("A new day."))
    await bot.say(f"{bot.mention()} one")  # 10 tokens in, 4 out: the day's 14 are spent
    await bot.settled()
    await bot.say(f"{bot.mention()} two")
    await bot.settled()
    await bot.say(f"{bot.mention()} three")
    await bot.settled()
    assert len(llm_server.requests) == 1
    assert await bot.contents() == ["Sixteen characters"]
    assert await bot.embeds() == [DAILY_LIMIT]
    said = (await bot.messages())[-1].embeds[0]["description"]
    assert "00:00 UTC" in said
    await bot.say(f"{bot.mention()} hello", by=Person.BOB)
    await bot.settled()
    assert len(llm_server.requests) == 2
    await bot.chat.runtime.metrics.flushed()
    day = 86_400
    await database.execute("UPDATE token_usage SET recorded_at = recorded_at - ?", (day,))
    await database.execute("UPDATE user_limits SET quota_noticed_at = quota_noticed_at - ?", (day,))
    await bot.say(f"{bot.mention()} four")
    await bot.settled()
    assert await bot.contents() == ["Sixteen characters", "For Bob.", "A new day."]
    assert await bot.embeds() == [DAILY_LIMIT]


async def test_a_servers_admins_tighten_the_authors_limits_but_never_lift_them(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    author = database.settings(**SHORT, user_cooldown_ms=60_000, user_daily_tokens=1_000)
    bot = await open_bot(author, chain_for(llm_server))
    for lifted in ({"cooldown_ms": 0}, {"cooldown_ms": 1_000}, {"daily_tokens": 0}):
        title, text = said(await bot.tomori("limits", **lifted))
        assert title == "Not Changed", lifted
        assert "the bot's author" in text
    assert said(await bot.tomori("limits", cooldown_ms=120_000))[0] == "Tomori Settings"
    # A looser value stored by any other way (an older version, a hand edit) gives way too.
    await database.execute("UPDATE server_settings SET cooldown_ms = 0, daily_tokens = 0")
    llm_server.script(answer("First."), answer("Never."))
    await bot.say(f"{bot.mention()} one")
    await bot.settled()
    await bot.say(f"{bot.mention()} two")
    await bot.settled()
    assert len(llm_server.requests) == 1
    assert await bot.embeds() == [SLOW_DOWN]


async def test_a_servers_members_share_the_tokens_the_author_gives_the_server_a_day(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT, server_daily_tokens=14), chain_for(llm_server))
    llm_server.script(answer("Sixteen characters"), answer("Never."))
    await bot.say(f"{bot.mention()} one")  # 10 tokens in, 4 out: the server's 14 are spent
    await bot.settled()
    await bot.say(f"{bot.mention()} hello", by=Person.BOB)
    await bot.settled()
    assert len(llm_server.requests) == 1  # Bob spent nothing, but the server has
    assert await bot.contents() == ["Sixteen characters"]
    notice = (await bot.messages())[-1].embeds[0]
    assert notice["title"] == DAILY_LIMIT
    assert notice["description"].startswith("This server has used the tokens it has for today")


async def test_a_member_queues_at_most_their_share_and_is_told_the_queue_is_full(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    settings = database.settings(**SHORT, queue_per_member=2, follow_ups=False)
    bot = await open_bot(settings, chain_for(llm_server))
    llm_server.script(stalled_after("Busy.\n\n"), answer("Bob 1."), answer("Bob 2."))
    await bot.say(f"{bot.mention()} a long one")
    await bot.sent_event.wait()  # Alice's answer holds the channel
    for n in (1, 2, 3):
        last = await bot.say(f"{bot.mention()} question {n}", by=Person.BOB)
    await bot.settled()
    assert await bot.contents() == ["Busy.", "Bob 1.", "Bob 2."]
    assert len(llm_server.requests) == 3  # the third was never queued, never asked
    [full] = [m for m in await bot.messages() if m.embeds and m.embeds[0]["title"] == "Queue Full"]
    assert full.reply_to == last.id


async def test_a_provider_that_reports_no_usage_is_counted_by_its_characters(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(database.settings(**SHORT, user_daily_tokens=100), chain_for(llm_server))
    long = "word " * 80  # 400 characters: 100 tokens
    llm_server.script(
        Reply(body=[sse(chunk(long)), sse(chunk(finish="stop")), sse("[DONE]")]),
    )
    await bot.say(f"{bot.mention()} talk a lot")
    await bot.settled()
    await bot.say(f"{bot.mention()} more")
    await bot.settled()
    assert len(llm_server.requests) == 1
    assert await bot.embeds() == [DAILY_LIMIT]
    rows = await database.rows("SELECT input_tokens, output_tokens, guild_id FROM token_usage")
    assert len(rows) == 1
    assert rows[0][0] > 0
    assert rows[0][1:] == (100, str(GUILD_ID))


async def test_a_queued_message_is_refused_when_the_turn_before_it_spent_the_day(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(settings_for(tmp_path, user_daily_tokens=14), chain_for(llm_server))
    llm_server.script(answer("Sixteen characters", gap=0.05), answer("Never sent."))
    await bot.say(f"{bot.mention()} one")
    await bot.say(f"{bot.mention()} two")  # admitted while the first is still answering: queued
    await bot.settled()
    assert len(llm_server.requests) == 1
    assert await bot.contents() == ["Sixteen characters"]
    assert await bot.embeds() == [DAILY_LIMIT]


async def test_a_tool_loop_stops_before_its_next_pass_once_the_askers_day_is_spent(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(settings_for(tmp_path, user_daily_tokens=40), chain_for(llm_server))
    first = tool_call("current_time", "{}", call_id="c0", usage=(10, 5), text="Checking.\n\n")
    more = [tool_call("current_time", "{}", call_id=f"c{n}", usage=(10, 5)) for n in range(1, 10)]
    llm_server.script(first, *more, answer("Never."))
    await bot.say(f"{bot.mention()} what time is it, ten times over?")
    await bot.settled()
    assert len(llm_server.requests) == 3  # 15, 30, then 45 of the day's 40: no fourth pass
    assert await bot.contents() == ["Checking."]  # what was shown stays
    assert await bot.embeds() == [DAILY_LIMIT]
    await bot.chat.runtime.metrics.flushed()
    used = await bot.chat.runtime.database.fetchall(
        "SELECT SUM(input_tokens + output_tokens) AS used FROM token_usage"
    )
    assert used[0]["used"] == 45  # the passes it ran are the asker's
    await bot.say(f"{bot.mention()} once more")
    await bot.settled()
    assert len(llm_server.requests) == 3


async def test_bots_start_at_most_max_bot_turns_in_a_row_until_a_human_speaks(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    settings = settings_for(tmp_path, reply_to_bots=True, max_bot_turns=2)
    bot = await open_bot(settings, chain_for(llm_server))
    llm_server.script(*[answer("Beep.")] * 5)
    for _ in range(4):
        await bot.say(f"{bot.mention()} beep", by=Person.OTHER_BOT)
        await bot.settled()
    assert len(llm_server.requests) == 2
    await bot.say("you two, calm down", by=Person.BOB)  # a human, not even asking the bot
    await bot.settled()
    await bot.say(f"{bot.mention()} beep", by=Person.OTHER_BOT)
    await bot.settled()
    assert len(llm_server.requests) == 3


@pytest.fixture
async def bot(tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot) -> ChatBot:
    return await open_bot(settings_for(tmp_path), chain_for(llm_server))


@pytest.mark.parametrize(
    ("take_away", "logged"),
    [
        (lambda bot: bot.deny(1 << 11), "no send_messages permission"),
        (lambda bot: bot.deny(1 << 14), "no embed_links permission"),
        (lambda bot: bot.time_out(), "timed out"),
    ],
    ids=["send-messages", "embed-links", "timed-out"],
)
async def test_a_channel_the_bot_cannot_post_in_gets_no_model_call(
    bot: ChatBot,
    llm_server: LLMServer,
    caplog: pytest.LogCaptureFixture,
    take_away: Callable[[ChatBot], None],
    logged: str,
) -> None:
    take_away(bot)
    llm_server.script(*[answer("Nobody would see this.")] * 2)
    with caplog.at_level(logging.WARNING, logger="tomori_cog.listener.deliverability"):
        await bot.say(f"{bot.mention()} hello")
        await bot.say(f"{bot.mention()} hello?")
        await bot.settled()
    assert llm_server.requests == []
    assert bot.sent == []
    lines = [
        r.getMessage() for r in caplog.records if r.name == "tomori_cog.listener.deliverability"
    ]
    assert len(lines) == 1  # one line, not one per message
    assert logged in lines[0]


async def test_a_channel_that_refused_a_send_is_left_alone_for_ten_minutes(
    bot: ChatBot, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    bot.forbid_sends(50001, "Missing Access")
    llm_server.script(*[answer("You will not see this.")] * 4)
    with caplog.at_level(logging.INFO):
        await bot.say(f"{bot.mention()} hello")
        await bot.settled()
        remembered = [r for r in caplog.records if r.name == "tomori_cog.listener.deliverability"]
        caplog.clear()
        await bot.say(f"{bot.mention()} hello?")
        await bot.say(f"{bot.mention()} anyone?")
        await bot.settled()
    assert len(llm_server.requests) == 1  # the first found out; the others cost nothing
    assert len(remembered) == 1
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    bot.allow_sends()
    gate = bot.chat._parts.gate.deliverability
    later = gate.clock() + REFUSED_FOR_S + 1
    gate.clock = lambda: later
    await bot.say(f"{bot.mention()} and now?")
    await bot.settled()
    assert await bot.contents() == ["You will not see this."]
    assert len(llm_server.requests) == 2
