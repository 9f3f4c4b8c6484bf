"""Every live answer carries a Stop button, on the Discord-faithful REST server with each
library's real client: a press by its asker (or a moderator) stops that answer at once (the
model's connection closed, what was posted kept) and no newer one, from any process of the bot
on the database; anyone else is told why not, only they see it; and the button is gone once
the answer ends (a press after says so); "Why no answer?" says whether its asker or a moderator
pressed it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.discord_rest import ChannelMessage, DiscordRestServer
from tests.support.llm_server import LLMServer, Reply, SeenConnection, hold_until, sse
from tests.support.openai_wire import chunk
from tests.support.personas import personas_added, reading_over_rest
from tests.support.rest_bots import OpenRestBot, RestBot, posted
from tests.support.rest_bots import said as ephemeral
from tests.support.scripts import finished
from tests.support.waiting import until
from tests.support.world import ALICE, BOB, CHANNEL_ID, Person
from tomori.commands import WHY
from tomori.words import said, say
from tomori_cog.stop_buttons import CUSTOM_ID_PREFIX

MANAGE_MESSAGES = 1 << 13
PATIENT = {"stream_first_token_timeout_ms": 60_000, "stream_sdk_call_timeout_ms": 60_000}
"""A held model is released or stopped by the test, never by its timeout."""
STOPPED_WITHIN_S = 1.0


async def started(open_rest_bot: OpenRestBot, llm: LLMServer, tmp_path: Path) -> RestBot:
    return await reading_over_rest(open_rest_bot, llm, tmp_path, **PATIENT)


def held(text: str, release: asyncio.Event) -> Reply:
    """The model says `text` (a whole paragraph: the channel shows it), then holds its stream
    open until `release`."""
    return Reply(body=[sse(chunk(f"{text}\n\n")), hold_until(release), *finished(text)])


def stop_id(message: ChannelMessage) -> str | None:
    """The custom id of the message's Stop button, if it shows one."""
    for row in message.payload["components"]:
        for button in row["components"]:
            if button["custom_id"].startswith(CUSTOM_ID_PREFIX):
                assert button["label"] == "Stop"
                return str(button["custom_id"])
    return None


async def live(server: DiscordRestServer, *, after: int = 0) -> ChannelMessage:
    """The first message (the bot's or a persona's), past the `after` first, showing a Stop
    button."""
    await until(lambda: any(stop_id(m) for m in posted(server)[after:]))
    return next(m for m in posted(server)[after:] if stop_id(m))


def now(server: DiscordRestServer, message: ChannelMessage) -> ChannelMessage:
    [shown] = [m for m in server.messages(CHANNEL_ID) if m.id == message.id]
    return shown


async def stopped_at_once(connection: SeenConnection | None) -> None:
    """The model's stream was closed by the bot within a second."""
    assert connection is not None
    async with asyncio.timeout(STOPPED_WITHIN_S):
        await connection.closed.wait()
    assert connection.closed_by_client


async def account(bot: RestBot, message_id: int, *, locale: str = "en-US") -> str:
    """What its asker is told, ephemerally, when they ask why of message `message_id`."""
    reply = await bot.on_message(WHY.name, bot.payload_of(message_id), locale=locale)
    return ephemeral(reply)


async def test_its_asker_stops_an_answer_at_once_and_another_member_cannot(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path)
    release = asyncio.Event()
    llm_server.script(held("Once upon a time, a long story began.", release))
    bot.say(f"{bot.mention()} tell me a long story")
    message = await live(discord_rest)
    assert message.content == "Once upon a time, a long story began."
    button = stop_id(message)
    assert button is not None
    connection = llm_server.requests[0].connection
    assert connection is not None

    refused = await bot.press(message, button, by=Person.BOB)
    assert refused["type"] == 4
    assert refused["data"]["flags"] & 64
    assert refused["data"]["content"] == say(said("reply.stop.not_yours"))
    assert not connection.closed.is_set()
    assert stop_id(now(discord_rest, message)) == button  # still there, for its asker

    stopped = await bot.press(message, button)
    assert stopped["type"] == 7  # answered at once, the button taken away with it
    assert stopped["data"]["components"] == []
    await stopped_at_once(connection)
    await bot.settled()
    assert bot.contents() == ["Once upon a time, a long story began."]  # what was shown stays
    assert not any(stop_id(m) for m in posted(discord_rest))
    assert len(llm_server.requests) == 1

    again = await bot.press(message, button, by=Person.BOB)  # an old client still shows it
    assert again["type"] == 4  # its message, without the button now, left as it is
    assert again["data"]["flags"] & 64
    assert again["data"]["content"] == say(said("reply.stop.ended"))
    assert discord_rest.rate_limited == {"global": 0, "user": 0, "shared": 0}


async def test_an_old_answers_button_stops_no_newer_turn_and_goes_when_its_answer_ends(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """The first answer ends: its button goes. Pressed anyway (an old client), it stops
    nothing of the answer running now; a moderator's press of the new one's stops that."""
    bot = await started(open_rest_bot, llm_server, tmp_path)
    first_done, second_done = asyncio.Event(), asyncio.Event()
    llm_server.script(held("The first answer.", first_done), held("The second one.", second_done))
    bot.say(f"{bot.mention()} first question")
    first = await live(discord_rest)
    old_button = stop_id(first)
    assert old_button is not None
    first_done.set()
    await bot.settled()
    await until(lambda: stop_id(now(discord_rest, first)) is None)  # taken away as it ended

    bot.say(f"{bot.mention()} second question")
    second = await live(discord_rest, after=1)
    new_button = stop_id(second)
    assert new_button not in (None, old_button)
    connection = llm_server.requests[1].connection
    assert connection is not None
    old_press = await bot.press(first, old_button)  # by its asker, who asked both
    assert old_press["type"] == 4
    assert old_press["data"]["flags"] & 64
    assert old_press["data"]["content"] == say(said("reply.stop.ended"))
    assert not connection.closed.is_set()
    assert stop_id(now(discord_rest, second)) == new_button

    assert new_button is not None
    moderator = await bot.press(second, new_button, by=Person.BOB, permissions=MANAGE_MESSAGES)
    assert moderator["type"] == 7
    await stopped_at_once(connection)
    await bot.settled()
    assert bot.contents() == ["The first answer.", "The second one."]
    assert not any(stop_id(m) for m in posted(discord_rest))


async def test_a_press_reaching_another_process_stops_the_turn_the_first_runs(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """Two processes of the bot on one database: the press reaches the one that does not run
    the turn (Discord sends an interaction to whichever it likes), which has nothing of it in
    memory; the lock row names the turn, and the first stops it."""
    runs = await started(open_rest_bot, llm_server, tmp_path)
    other = await started(open_rest_bot, llm_server, tmp_path)
    release = asyncio.Event()
    llm_server.script(held("A reply from the first process.", release))
    asked = runs.say(f"{runs.mention()} hello")
    message = await live(discord_rest)
    button = stop_id(message)
    assert button is not None

    refused = await other.press(message, button, by=Person.BOB)
    assert refused["type"] == 4
    assert refused["data"]["content"] == say(said("reply.stop.not_yours"))
    stopped = await other.press(message, button)
    assert stopped["type"] == 7
    await stopped_at_once(llm_server.requests[0].connection)
    await runs.settled()
    assert runs.contents() == ["A reply from the first process."]
    await until(lambda: not any(stop_id(m) for m in posted(discord_rest)))
    told = "The answer was stopped by you, with its Stop button."  # the row said whose press
    assert told in await account(runs, asked)


async def test_a_personas_answer_carries_the_button_through_the_bots_own_webhook(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """Discord lets a webhook's messages carry buttons only when an application owns it: the
    bot's own does, and its persona's answer is stopped from it as the bot's is."""
    bot = await started(open_rest_bot, llm_server, tmp_path)
    await personas_added(bot, "Aria")
    release = asyncio.Event()
    llm_server.script(held("La la la, a song begins.", release))
    bot.say("Aria, sing for us")
    message = await live(discord_rest)
    assert message.username == "Aria"
    assert message.webhook_id == int(discord_rest.webhooks_of(CHANNEL_ID)[0]["id"])
    button = stop_id(message)
    assert button is not None
    stopped = await bot.press(message, button)
    assert stopped["type"] == 7
    await stopped_at_once(llm_server.requests[0].connection)
    await bot.settled()
    assert [m.content for m in posted(discord_rest)] == ["La la la, a song begins."]
    assert stop_id(now(discord_rest, message)) is None


async def test_why_no_answer_says_whether_its_asker_or_a_moderator_pressed_stop(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """Alice stops the first answer to her, a moderator the second: each message's account
    says who, in the reader's language, and nothing of what was asked or answered."""
    bot = await started(open_rest_bot, llm_server, tmp_path)
    never = asyncio.Event()  # the presses stop both
    llm_server.script(held("The first answer.", never), held("The second answer.", never))
    own = bot.say(f"{bot.mention()} first question")
    first = await live(discord_rest)
    first_button = stop_id(first)
    assert first_button is not None
    assert (await bot.press(first, first_button))["type"] == 7
    await bot.settled()
    theirs = bot.say(f"{bot.mention()} second question")
    second = await live(discord_rest, after=1)
    second_button = stop_id(second)
    assert second_button is not None
    moderator = await bot.press(second, second_button, by=Person.BOB, permissions=MANAGE_MESSAGES)
    assert moderator["type"] == 7
    await bot.settled()
    assert bot.contents() == ["The first answer.", "The second answer."]

    by_asker = await account(bot, own)
    assert "The answer was stopped by you, with its Stop button." in by_asker
    by_moderator = await account(bot, theirs)
    assert "The answer was stopped by a moderator, with its Stop button." in by_moderator
    in_japanese = await account(bot, theirs, locale="ja")
    assert "回答はモデレーターが「停止」ボタンで停止しました。" in in_japanese
    assert "Delivered: 1 message." in by_asker
    assert "Delivered: 1 message." in by_moderator
    assert "投稿しました: メッセージ1件。" in in_japanese
    for told in (by_asker, by_moderator, in_japanese):
        for kept_out in ("question", "answer.", "alice", "bob", str(ALICE), str(BOB)):
            assert kept_out not in told
