"""A turn's history from the messages the cog already saw through the gateway, through the cog
in a bot of each library: one history read from Discord per channel, not one per turn; edits and
deletes reach the model as Discord shows them; a reconnect makes the next turn ask Discord again.
Each conversation runs with memory and without it (`TOMORI_HISTORY_MEMORY_CHANNELS=0`, the
history read from Discord every turn), and the model must be shown the same either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bots import ChatBot, NextcordChat, OpenBot, only_on
from tests.support.cog_settings import chain_for, settings_for
from tests.support.conversation import shown
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer
from tests.support.world import CHANNEL_IDS, Person
from tomori.config.settings import Delivery

ADD_REACTIONS = 1 << 6
"""A permission the bot does not need: denying it changes the channel, not what the bot can do."""

REMEMBERED = 500
"""Channels kept in memory (the default); 0 reads the history from Discord for every turn."""


@pytest.fixture(params=[REMEMBERED, 0], ids=["memory", "rest"])
def remembered(request: pytest.FixtureRequest) -> int:
    value: int = request.param
    return value


async def open_chat(
    tmp_path: Path,
    llm_server: LLMServer,
    open_bot: OpenBot,
    remembered: int,
    **settings: object,
) -> ChatBot:
    values: dict[str, object] = {"history_limit": 3, "history_memory_channels": remembered}
    values.update(settings)
    return await open_bot(settings_for(tmp_path, **values), chain_for(llm_server))


def reads_expected(remembered: int, with_memory: int, turns: int) -> int:
    """History reads from Discord: `with_memory` when remembered, else one per turn."""
    return with_memory if remembered else turns


async def test_a_conversation_of_several_turns_reads_the_history_from_discord_once(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered)
    bot.seed("before the bot was started")
    llm_server.script(answer("One."), answer("Two."), answer("Three."))
    await bot.say(f"{bot.mention()} first")
    await bot.settled()
    await bot.say("chatter", by=Person.BOB)
    await bot.say(f"{bot.mention()} second")
    await bot.settled()
    await bot.say(f"{bot.mention()} third", by=Person.BOB)
    await bot.settled()
    assert shown(llm_server, 0) == ["alice: before the bot was started", "alice: @Tomori first"]
    assert shown(llm_server, 1) == [
        "alice: @Tomori first",
        "One.",
        "bob: chatter",
        "alice: @Tomori second",
    ]
    assert shown(llm_server, 2) == [
        "bob: chatter",
        "alice: @Tomori second",
        "Two.",
        "bob: @Tomori third",
    ]
    assert await bot.contents() == ["One.", "Two.", "Three."]
    assert bot.history_reads == reads_expected(remembered, with_memory=1, turns=3)


async def test_a_bot_started_where_nothing_was_ever_said_reads_no_history_from_discord(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered)
    await bot.gateway_event("ready")  # Discord shows every channel with no last message
    llm_server.script(answer("Hello."), answer("Again."))
    await bot.say(f"{bot.mention()} first words here")
    await bot.settled()
    await bot.say(f"{bot.mention()} and again")
    await bot.settled()
    assert shown(llm_server, 0) == ["alice: @Tomori first words here"]
    assert shown(llm_server, 1) == [
        "alice: @Tomori first words here",
        "Hello.",
        "alice: @Tomori and again",
    ]
    assert await bot.contents() == ["Hello.", "Again."]
    assert bot.history_reads == reads_expected(remembered, with_memory=0, turns=2)


async def test_a_channel_with_messages_from_before_the_session_is_read_from_discord(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, REMEMBERED)
    earlier = bot.seed("said before the bot connected", by=Person.BOB)
    bot.client.get_channel(earlier.channel).last_message_id = earlier.id  # as Discord shows it
    await bot.gateway_event("ready")
    llm_server.script(answer("I see it."))
    await bot.say(f"{bot.mention()} what did bob say?")
    await bot.settled()
    assert shown(llm_server, 0) == [
        "bob: said before the bot connected",
        "alice: @Tomori what did bob say?",
    ]
    assert bot.history_reads == 1


async def test_edited_messages_reach_the_model_in_their_new_version(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered, history_limit=5)
    llm_server.script(answer("Noted."), answer("5433 and 5434."))
    staging = bot.seed("staging runs on port 5432")  # read from Discord: not in the library's cache
    prod = await bot.say("and prod on 5432 too", by=Person.BOB)  # seen through the gateway
    await bot.say(f"{bot.mention()} remember that")
    await bot.settled()
    await bot.edit(staging, "staging runs on port 5433")
    await bot.edit(prod, "and prod on 5434")
    await bot.say(f"{bot.mention()} which ports?")
    await bot.settled()
    assert shown(llm_server, 1) == [
        "alice: staging runs on port 5433",
        "bob: and prod on 5434",
        "alice: @Tomori remember that",
        "Noted.",
        "alice: @Tomori which ports?",
    ]
    assert "5432" not in str(llm_server.requests[1].body)
    assert bot.history_reads == reads_expected(remembered, with_memory=1, turns=2)


async def test_a_deleted_message_does_not_reach_the_model(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered)
    llm_server.script(answer("Hi."), answer("Ok."))
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    secret = await bot.say("the password is hunter2", by=Person.BOB)
    await bot.delete(secret)
    await bot.say(f"{bot.mention()} what did bob say?")
    await bot.settled()
    assert shown(llm_server, 1) == [
        "alice: @Tomori hello",
        "Hi.",
        "alice: @Tomori what did bob say?",
    ]
    assert "hunter2" not in str(llm_server.requests[1].body)
    assert bot.history_reads == reads_expected(remembered, with_memory=1, turns=2)


async def test_messages_deleted_in_bulk_do_not_reach_the_model(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered, history_limit=5)
    llm_server.script(answer("Hi."), answer("Ok."))
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    spam = [await bot.say(f"buy now {n}", by=Person.BOB) for n in range(3)]
    await bot.delete(*spam)
    await bot.say(f"{bot.mention()} anything new?")
    await bot.settled()
    assert shown(llm_server, 1) == ["alice: @Tomori hello", "Hi.", "alice: @Tomori anything new?"]
    assert bot.history_reads == reads_expected(remembered, with_memory=1, turns=2)


async def test_after_the_channels_permissions_change_the_next_turn_reads_from_discord(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    """The bot may have been unable to see the channel for a while: what it missed is read."""
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered)
    llm_server.script(answer("Hi."), answer("Ok."))
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    bot.deny(ADD_REACTIONS)
    await bot.admitted()
    bot.seed("said while the bot could not see the channel", by=Person.BOB)
    await bot.say(f"{bot.mention()} see that?")
    await bot.settled()
    assert shown(llm_server, 1)[-2:] == [
        "bob: said while the bot could not see the channel",
        "alice: @Tomori see that?",
    ]
    assert bot.history_reads == reads_expected(remembered, with_memory=2, turns=2)


async def test_a_reply_chain_reaching_past_memory_shows_the_old_message_as_it_now_is(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered)
    old = bot.seed("we deploy on friday")
    for n in range(4):
        bot.seed(f"chatter {n}")
    llm_server.script(answer("Hi."), answer("Monday."))
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    objection = await bot.say("no, thursday", by=Person.BOB, replying_to=old)
    await bot.edit(old, "we deploy on monday")  # older than what memory holds of the channel
    await bot.say(f"{bot.mention()} so when?", replying_to=objection)
    await bot.settled()
    assert shown(llm_server, 1) == [
        "alice: we deploy on monday",
        "alice: @Tomori hello",
        "Hi.",
        "bob: no, thursday",
        "alice: @Tomori so when?",
    ]
    assert bot.history_reads == reads_expected(remembered, with_memory=1, turns=2)


async def test_after_a_reconnect_the_next_turn_reads_from_discord_and_sees_what_was_missed(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered)
    llm_server.script(answer("Hi."), answer("Welcome back."), answer("Still here."))
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    await bot.reconnect()
    bot.seed("sent while the bot was away", by=Person.BOB)  # the gateway never delivered it
    await bot.say(f"{bot.mention()} are you back?")
    await bot.settled()
    await bot.say(f"{bot.mention()} and now?")
    await bot.settled()
    assert shown(llm_server, 1) == [
        "alice: @Tomori hello",
        "Hi.",
        "bob: sent while the bot was away",
        "alice: @Tomori are you back?",
    ]
    assert shown(llm_server, 2)[-2:] == ["Welcome back.", "alice: @Tomori and now?"]
    assert bot.history_reads == reads_expected(remembered, with_memory=2, turns=3)


@pytest.mark.parametrize(
    "event",
    [
        "disconnect",
        "resumed",
        "shard_ready",
        "guild_join",
        "guild_available",
        "guild_role_update",
        "member_update",
    ],
)
async def test_after_an_event_that_may_hide_messages_the_next_turn_reads_from_discord(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, event: str
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, REMEMBERED)
    llm_server.script(answer("Hi."), answer("Ok."))
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    await bot.gateway_event(event)
    bot.seed("sent while the bot could not see it", by=Person.BOB)
    await bot.say(f"{bot.mention()} see that?")
    await bot.settled()
    assert shown(llm_server, 1)[-2:] == [
        "bob: sent while the bot could not see it",
        "alice: @Tomori see that?",
    ]
    assert bot.history_reads == 2


async def test_the_bots_own_answers_are_shown_as_last_edited(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(
        tmp_path,
        llm_server,
        open_bot,
        remembered,
        delivery=Delivery.EDIT,
        stream_edit_interval_ms=20,
    )
    long = "A long answer that grows over several edits before it is done."
    # (an answer's edits keep to the channel's steady pace: one a second)
    llm_server.script(answer(long, pieces=6, gap=0.25), answer("Short."))
    await bot.say(f"{bot.mention()} tell me something")
    await bot.settled()
    assert bot.edits > 1
    await bot.say(f"{bot.mention()} and again")
    await bot.settled()
    assert shown(llm_server, 1) == [
        "alice: @Tomori tell me something",
        long,
        "alice: @Tomori and again",
    ]
    assert bot.history_reads == reads_expected(remembered, with_memory=1, turns=2)


async def test_a_long_conversation_keeps_its_window_and_a_reply_reaches_back_past_it(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered)
    llm_server.script(answer("Port noted."), answer("Still 5433."))
    question = await bot.say(f"{bot.mention()} staging moved to 5433")
    await bot.settled()
    for n in range(10):  # more than memory keeps of a channel (twice the history)
        await bot.say(f"chatter {n}", by=Person.BOB)
    question = await bot.edit(question, f"{bot.mention()} staging moved to port 5433")
    await bot.say(f"{bot.mention()} is it still?", replying_to=question)
    await bot.settled()
    assert shown(llm_server, 1) == [
        "alice: @Tomori staging moved to port 5433",
        "bob: chatter 7",
        "bob: chatter 8",
        "bob: chatter 9",
        "alice: @Tomori is it still?",
    ]
    assert await bot.contents() == ["Port noted.", "Still 5433."]
    assert bot.history_reads == reads_expected(remembered, with_memory=1, turns=2)


async def test_turns_in_many_channels_read_each_channels_history_once(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered)
    channels = CHANNEL_IDS[:2]
    llm_server.script(*(answer(f"Answer {n}.") for n in range(4)))
    for round_ in range(2):
        for channel in channels:
            await bot.say(f"{bot.mention()} round {round_}", channel=channel)
            await bot.settled(channel)
    for channel in channels:
        assert len(await bot.contents(channel)) == 2
    assert bot.history_reads == reads_expected(remembered, with_memory=2, turns=4)


@only_on("nextcord", "dpytest echoes a send before answering it, and an edit at once")
@pytest.mark.parametrize(("echo_delay", "reads"), [(0.3, 1), (1.5, 2)])
async def test_a_turn_right_after_an_answer_shows_its_last_edit_however_late_the_echo(
    tmp_path: Path,
    llm_server: LLMServer,
    open_bot: OpenBot,
    echo_delay: float,
    reads: int,
) -> None:
    """The gateway echoes the answer's last edit after the next turn began: that turn waits a
    moment for it, and past that moment reads the history from Discord."""
    bot = await open_chat(
        tmp_path,
        llm_server,
        open_bot,
        REMEMBERED,
        delivery=Delivery.EDIT,
        stream_edit_interval_ms=20,
    )
    assert isinstance(bot, NextcordChat)
    bot.nc.discord.echo_delay = echo_delay
    long = "A long answer that grows over several edits before it is done."
    # (an answer's edits keep to the channel's steady pace: one a second)
    llm_server.script(answer(long, pieces=6, gap=0.25), answer("Short."))
    await bot.say(f"{bot.mention()} tell me something")
    await bot.settled()
    await bot.say(f"{bot.mention()} and again")
    await bot.settled()
    assert shown(llm_server, 1) == [
        "alice: @Tomori tell me something",
        long,
        "alice: @Tomori and again",
    ]
    assert bot.history_reads == reads


async def test_a_threads_starter_message_is_read_from_memory_as_it_now_is(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, remembered: int
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, remembered)
    llm_server.script(answer("Ok."), answer("Two left."), answer("One left."))
    await bot.say(f"{bot.mention()} hello")  # memory of the channel begins
    await bot.settled()
    starter = await bot.say("release checklist for 2.0")
    bot.open_thread(starter.id)  # a thread started from a message takes its ID
    await bot.say(f"{bot.mention()} what is left?", channel=starter.id)
    await bot.settled(starter.id)
    await bot.edit(starter, "release checklist for 2.1")
    await bot.say(f"{bot.mention()} and now?", channel=starter.id)
    await bot.settled(starter.id)
    assert shown(llm_server, 2)[0] == "alice: release checklist for 2.1"
    assert bot.message_reads == (0 if remembered else 2)
