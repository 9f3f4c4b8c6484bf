"""What a user does while the bot answers in a channel, through the cog in a bot of each
library: a queued message deleted before its turn is not answered, one edited is answered as
it now is; the user being answered stops it with a stop word."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.conversation import shown
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer, stalled_after, tool_call
from tests.support.tomori_commands import said
from tests.support.world import Person


async def open_chat(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, **settings: object
) -> ChatBot:
    return await open_bot(settings_for(tmp_path, **settings), chain_for(llm_server))


async def test_a_queued_message_deleted_before_its_turn_is_not_answered(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot)
    llm_server.script(answer("First.", gap=0.1), answer("Third."))
    await bot.say(f"{bot.mention()} first")
    await llm_server.request_arrived.wait()
    second = await bot.say(f"{bot.mention()} second", by=Person.BOB)
    await bot.say(f"{bot.mention()} third", by=Person.BOB)
    await bot.delete(second)  # while the first answer streams: its turn has not started
    await bot.settled()
    assert await bot.contents() == ["First.", "Third."]
    assert len(llm_server.requests) == 2
    assert "second" not in str(llm_server.requests[1].body)


async def test_a_queued_message_edited_before_its_turn_is_answered_as_edited(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot)
    llm_server.script(answer("First.", gap=0.1), answer("Six."))
    await bot.say(f"{bot.mention()} first")
    await llm_server.request_arrived.wait()
    question = await bot.say(f"{bot.mention()} what is 2+2?", by=Person.BOB)
    await bot.edit(question, f"{bot.mention()} what is 3+3?")
    await bot.settled()
    assert await bot.contents() == ["First.", "Six."]
    assert shown(llm_server, 1)[-1] == "bob: @Tomori what is 3+3?"
    assert "2+2" not in str(llm_server.requests[1].body)


async def test_a_stop_word_of_the_user_being_answered_stops_it_and_clears_only_their_queue(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot)  # follow-ups off: their second queues
    llm_server.script(stalled_after("Thinking hard.\n\n"), answer("For Bob."))
    await bot.say(f"{bot.mention()} think")
    await bot.sent_event.wait()
    await bot.say(f"{bot.mention()} and another thing")  # queued: theirs, cleared by the stop
    await bot.say(f"{bot.mention()} my turn", by=Person.BOB)  # queued: Bob's, kept
    await bot.admitted()
    said_at = time.monotonic()
    await bot.say("Stop!")  # no mention needed: it is their answer
    connection = llm_server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), 1)
    assert connection.closed_at is not None
    assert connection.closed_at - said_at < 0.5
    await bot.settled()
    assert await bot.contents() == ["Thinking hard.", "For Bob."]
    assert len(llm_server.requests) == 2  # their queued message got no turn of its own
    assert [sent.reply_to for sent in bot.sent][-1] is not None  # Bob's, as a reply to him
    assert not any("Stop!" in line for line in shown(llm_server, 1))  # a command, not a word


async def test_a_stop_word_of_someone_else_is_an_ordinary_message(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot)
    llm_server.script(answer("Done.", gap=0.05), answer("Stopping what?"))
    await bot.say(f"{bot.mention()} count")
    await llm_server.request_arrived.wait()
    await bot.say("stop", by=Person.BOB)  # not addressed to the bot: left alone
    await bot.say(f"{bot.mention()} stop", by=Person.BOB)  # addressed: queued, answered
    await bot.settled()
    assert await bot.contents() == ["Done.", "Stopping what?"]


async def test_a_follow_up_stops_the_answer_and_the_next_answer_covers_both(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, follow_ups=True)
    llm_server.script(stalled_after("Python 3.11 has...\n\n"), answer("In 3.12, f-strings..."))
    await bot.say(f"{bot.mention()} what is new in python?")
    await bot.sent_event.wait()
    said_at = time.monotonic()
    follow_up = await bot.say(f"{bot.mention()} wait, I meant Python 3.12")
    connection = llm_server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), 1)
    assert connection.closed_at is not None
    assert connection.closed_at - said_at < 0.5
    await bot.settled()
    assert await bot.contents() == ["Python 3.11 has...", "In 3.12, f-strings..."]
    assert len(llm_server.requests) == 2
    assert shown(llm_server, 1)[-3:] == [
        "alice: @Tomori what is new in python?",
        "Python 3.11 has...",
        "alice: @Tomori wait, I meant Python 3.12\n"  # and the model is told why it was cut
        "[Note from the bot, not part of the conversation: answers stopped before this one]\n"
        '- Your answer to "alice: @Tomori what is new in python?" was cut short after the part'
        " of it shown above, because its author wrote again: answer what they added, without"
        " repeating what you said.",
    ]
    assert bot.sent[-1].reply_to == follow_up.id
    _, status = said(await bot.tomori("status"))
    assert "Stopped by /kill: 0; for a follow-up: 1" in status


async def test_three_quick_follow_ups_get_one_answer_to_the_last(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, follow_ups=True)
    llm_server.script(stalled_after("Working on it.\n\n"), answer("Blue, then."))
    await bot.say(f"{bot.mention()} paint it red")
    await bot.sent_event.wait()
    await bot.say(f"{bot.mention()} no, green")
    await bot.say(f"{bot.mention()} no, yellow")
    last = await bot.say(f"{bot.mention()} no, blue")
    await bot.settled()
    assert await bot.contents() == ["Working on it.", "Blue, then."]
    assert len(llm_server.requests) == 2
    sent = shown(llm_server, 1)
    assert sent[-5:-1] == [
        "alice: @Tomori paint it red",
        "Working on it.",
        "alice: @Tomori no, green",
        "alice: @Tomori no, yellow",
    ]
    last_said, note = sent[-1].split("\n", 1)
    assert last_said == "alice: @Tomori no, blue"
    # (whether "green" or "yellow" got a turn, stopped before it showed anything, is timing)
    assert note.splitlines()[1] == (
        '- Your answer to "alice: @Tomori paint it red" was cut short after the part of it'
        " shown above, because its author wrote again: answer what they added, without"
        " repeating what you said."
    )
    assert bot.sent[-1].reply_to == last.id


async def test_another_users_message_still_queues_behind_the_answer(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, follow_ups=True)
    llm_server.script(answer("For Alice.", gap=0.05), answer("For Bob."))
    await bot.say(f"{bot.mention()} a question")
    await llm_server.request_arrived.wait()
    await bot.say(f"{bot.mention()} mine", by=Person.BOB)
    await bot.settled()
    assert await bot.contents() == ["For Alice.", "For Bob."]


async def test_with_follow_ups_turned_off_for_the_server_a_second_message_queues(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, follow_ups=True)
    _, text = said(await bot.tomori("followups", enabled=False))
    assert text.startswith("Follow-ups in this server: off")
    assert "Follow-ups: off (this server)" in said(await bot.tomori("show"))[1]
    llm_server.script(answer("First.", gap=0.05), answer("Second."))
    await bot.say(f"{bot.mention()} one")
    await llm_server.request_arrived.wait()
    await bot.say(f"{bot.mention()} two")
    await bot.settled()
    assert await bot.contents() == ["First.", "Second."]


async def test_a_follow_up_after_a_tool_call_lets_the_answer_using_it_finish(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_chat(tmp_path, llm_server, open_bot, follow_ups=True)
    llm_server.script(
        tool_call("current_time", "{}"),
        answer("It is noon.", gap=0.1),
        answer("And in Tokyo, night."),
    )
    await bot.say(f"{bot.mention()} what time is it?")
    while len(llm_server.requests) < 2:  # the tool has run: its result is in this request
        llm_server.request_arrived.clear()
        await llm_server.request_arrived.wait()
    follow_up = await bot.say(f"{bot.mention()} and in Tokyo?")
    await bot.settled()
    assert await bot.contents() == ["It is noon.", "And in Tokyo, night."]
    assert shown(llm_server, 2)[-2:] == ["It is noon.", "alice: @Tomori and in Tokyo?"]
    assert bot.sent[-1].reply_to == follow_up.id
