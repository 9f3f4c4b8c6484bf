"""Regenerate and swipe, through the cog on the Discord-faithful REST server with each
library's real client: the last answer carries ◀ 1/1 ▶ Regenerate once it ends; Regenerate
asks the model again with the same context and writes the new take into the answer; ◀ shows
the first again, and the next turn's model is shown the take on display; another member's
press is refused, a new message freezes the takes, a take of fewer or more messages deletes or
posts the rest, swipes turn off per server, a persona's takes survive a restart, and
Regenerate past the takes an answer keeps is refused. A new take of a queued question is shown
what its first take was; a press right behind a new message is told the answer stays, and a
moderator held by the asker's limit is told whose it is; a take whose delivery is cut, or
whose Stop button is pressed, is no take. Every word of them is the catalog's: the labels in
the server's language, a refusal in the presser's.

Each test a story through one bot, and each channel's bucket five times quicker than
Discord's in the bot and the server alike (`tests/support/pace.py`): the subject here is what
the buttons do, not Discord's pace, which tests/cog/test_stop_button.py and the limits bench
hold the tidy-ups to."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import ChannelMessage, DiscordRestServer, RouteLimit
from tests.support.llm_server import LLMServer, Reply, drop, hold_until, sse
from tests.support.openai_wire import chunk
from tests.support.pace import quicken_channel_pace
from tests.support.rest_bots import MANAGE_GUILD, OpenRestBot, RestBot, conversation, posted
from tests.support.scripts import answer, http_error, in_parts, stalled_after
from tests.support.waiting import until
from tests.support.world import Person
from tomori.commands.table import WHY
from tomori.turns.takes import PressRefusal
from tomori.words import said, say
from tomori_cog.stop_buttons import CUSTOM_ID_PREFIX as STOP_PREFIX

MANAGE_MESSAGES = 1 << 13
ERRORS_SILENT = {
    "id": "2",
    "name": "tomori",
    "type": 1,
    "options": [
        {"name": "errors", "type": 1, "options": [{"name": "mode", "type": 3, "value": "silent"}]}
    ],
}
"""/tomori errors mode:silent: a failed answer tells nothing in the channel."""
WINDOW_S = 1.0
"""Each channel's write bucket in these tests: Discord's five writes, in a second."""


@pytest.fixture(autouse=True)
def quick_channels(discord_rest: DiscordRestServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bot paces each channel by `WINDOW_S` (and a margin), and the server holds it to
    that bucket: still refused past five writes in it."""
    quicken_channel_pace(WINDOW_S * 1.05, monkeypatch)
    for route in ("message_create", "message_edit", "message_delete"):
        discord_rest.route_limits[route] = RouteLimit(5, WINDOW_S)


def buttons(message: ChannelMessage) -> dict[str, dict[str, Any]]:
    """The message's take buttons, by what they do (the end of their custom id)."""
    return {
        str(button["custom_id"]).rpartition(":")[2]: button
        for row in message.payload["components"]
        for button in row["components"]
    }


def labels(message: ChannelMessage) -> list[str]:
    return [str(b["label"]) for row in message.payload["components"] for b in row["components"]]


def told(reply: dict[str, Any], refusal: PressRefusal, locale: str = "en") -> None:
    """The press was answered with `refusal`'s words in `locale`, only to the presser."""
    assert reply["type"] == 4
    assert reply["data"]["flags"] & 64
    assert reply["data"]["content"] == say(refusal.words, locale)


def stop_buttons(message: ChannelMessage) -> list[str]:
    """The custom ids of the Stop buttons the message shows."""
    return [
        str(button["custom_id"])
        for row in message.payload["components"]
        for button in row["components"]
        if str(button["custom_id"]).startswith(STOP_PREFIX)
    ]


def counter(message: ChannelMessage) -> str:
    """Which take the answer shows ("2/3"): the label between ◀ and ▶."""
    return str(buttons(message)["count"]["label"]) if "count" in buttons(message) else ""


def regenerate(message: ChannelMessage) -> str:
    return str(buttons(message)["regenerate"]["custom_id"])


def previous(message: ChannelMessage) -> str:
    return str(buttons(message)["previous"]["custom_id"])


async def why(bot: RestBot, message_id: int) -> str:
    """What its sender is told of message `message_id` (Apps → Why no answer?)."""
    reply = await bot.on_message(WHY.name, bot.payload_of(message_id))
    [embed] = reply["data"]["embeds"]
    return str(embed["description"])


async def showing(bot: RestBot, count: str) -> ChannelMessage:
    """The bot's or a persona's message that shows the buttons at take `count`, once it
    does."""

    def found() -> ChannelMessage | None:
        return next((m for m in posted(bot.server) if counter(m) == count), None)

    await until(lambda: found() is not None)
    message = found()
    assert message is not None
    return message


async def test_regenerate_and_swipe_the_bots_answers_until_the_channel_goes_on(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Regenerate asks again with the same context, ◀ shows the first take and the next turn
    reads it; another member is refused; a regeneration that fails is no new message (no mark,
    nothing in the message's "Why no answer?", the server's errors setting holds); the channel
    going on freezes the takes; a take of fewer messages deletes the rest and one of more posts
    them; swipes turn off."""
    bot = await open_rest_bot(
        settings_for(tmp_path, history_memory_channels=0), chain_for(llm_server)
    )
    long = "a" * 1_500 + "\n\n" + "b" * 1_500  # two messages of Discord's 2,000 characters
    llm_server.script(
        answer("First take."),
        http_error(429),
        answer("Second take."),
        answer("Then more."),
        answer(long),
        answer("Short."),
        answer("No buttons."),
    )
    asked = bot.say(f"{bot.mention()} tell me something")
    await showing(bot, "1/1")
    await bot.tidied()
    [first] = bot.shown()  # as it stays once the answer's tidy-ups are done
    assert first.content == "First take."
    assert counter(first) == "1/1"
    assert not stop_buttons(first)  # the take buttons' edit took the Stop button off
    assert bot.server.requests_by_route["message_edit"] == 1  # one edit did both
    assert labels(first) == ["◀", "1/1", "▶", "Regenerate"]
    assert buttons(first)["previous"]["disabled"]
    assert buttons(first)["next"]["disabled"]
    again = regenerate(first)

    told(await bot.press(first, again, by=Person.BOB), PressRefusal.NOT_YOURS)
    in_japanese = await bot.press(first, again, by=Person.BOB, locale="ja")  # their language
    told(in_japanese, PressRefusal.NOT_YOURS, "ja")
    assert "モデレーター" in in_japanese["data"]["content"]
    assert len(llm_server.requests) == 1

    await bot.command(ERRORS_SILENT, permissions=MANAGE_GUILD)
    failed = await bot.press(first, again)  # the model answers 429
    assert failed["type"] == 7
    await bot.settled()
    await until(lambda: counter(bot.shown()[0]) == "1/1")  # the buttons back, as they were
    await bot.tidied()
    assert [(m.content, m.embeds) for m in bot.shown()] == [("First take.", [])]  # silent
    assert bot.server.marks_of(asked) == []  # no new message: nothing marked on the asked one
    assert await why(bot, asked) == (  # what became of the message itself, as before
        "- Seen, and taken up at once.\n"
        "- Model `openai:test-model`: answered.\n"
        "- Delivered: 1 message.\n\n"
        "Kept for a day; no message text is kept."
    )
    assert len(llm_server.requests) == 2

    pressed = await bot.press(first, regenerate(first))
    assert pressed["type"] == 7  # acknowledged at once: the buttons go while it is written
    assert pressed["data"]["components"] == []
    await bot.settled()
    second = await showing(bot, "2/2")
    assert second.id == first.id  # the same message, its text replaced
    assert second.content == "Second take."
    assert [m.content for m in bot.shown()] == ["Second take."]
    assert conversation(llm_server.requests[2]) == conversation(llm_server.requests[0])

    swiped = await bot.press(second, previous(second))
    assert swiped["type"] == 6
    back = await showing(bot, "1/2")
    assert back.content == "First take."
    assert not buttons(back)["next"]["disabled"]
    assert buttons(back)["previous"]["disabled"]

    bot.say(f"{bot.mention()} and then?")
    await bot.settled()
    seen = conversation(llm_server.requests[3])
    assert ("assistant", "First take.") in seen
    assert not any("Second take." in content for _, content in seen)
    answered = next(m for m in bot.shown() if m.id == first.id)
    await until(lambda: answered.payload["components"] == [])  # frozen: the channel went on
    assert bot.contents() == ["First take.", "Then more."]
    assert (await showing(bot, "1/1")).content == "Then more."  # the new last answer's own
    told(await bot.press(answered, again), PressRefusal.FROZEN)
    assert len(llm_server.requests) == 4

    # A take of fewer messages, then one of more: the buttons always on the last.
    bot.say(f"{bot.mention()} a long one")
    await until(lambda: len(bot.shown()) == 4 and counter(bot.shown()[-1]) == "1/1")
    assert [m.content for m in bot.shown()[2:]] == ["a" * 1_500, "b" * 1_500]
    long_first = bot.shown()[-1]
    await bot.press(long_first, regenerate(long_first))
    await bot.settled()
    short = await showing(bot, "2/2")
    assert [m.content for m in bot.shown()[2:]] == ["Short."]  # the second message deleted
    await bot.press(short, previous(short))
    back = await showing(bot, "1/2")
    assert [m.content for m in bot.shown()[2:]] == ["a" * 1_500, "b" * 1_500]  # posted again
    assert back.id == bot.shown()[-1].id
    assert bot.shown()[2].payload["components"] == []

    off = {"name": "swipes", "type": 1, "options": [{"name": "enabled", "type": 5, "value": False}]}
    command = {"id": "1", "name": "tomori", "type": 1, "options": [off]}
    turned = await bot.command(command, permissions=MANAGE_GUILD, locale="ja")
    [embed] = turned["data"]["embeds"]
    assert embed["description"] == say(said("settings.swipes_off"), "ja")
    told(await bot.press(back, regenerate(back)), PressRefusal.SWIPES_OFF)
    bot.say(f"{bot.mention()} again")
    await bot.settled()
    assert bot.contents()[-1] == "No buttons."
    await until(lambda: all(m.payload["components"] == [] for m in bot.shown()))  # frozen
    await bot.tidied()
    assert all(m.payload["components"] == [] for m in bot.shown())  # none came back
    assert len(llm_server.requests) == 7


async def test_a_personas_takes_survive_a_restart_and_a_moderator_may_press(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """A persona's answer has takes, written through its webhook; they are in the database,
    so after a restart a moderator's Regenerate and the asker's ◀ work as before."""
    settings = settings_for(tmp_path, history_memory_channels=0)
    bot = await open_rest_bot(settings, chain_for(llm_server))
    bot.prefers_locale("ja")  # the server's language labels the buttons
    bot.allow_webhooks()  # after: the guild's update carries its channels as first declared
    await bot.persona("add", name="Aria", prompt="You are Aria.")
    llm_server.script(answer("Aria, once."), answer("Aria, twice."))
    bot.say("hi aria")
    first = await showing(bot, "1/1")
    assert first.username == "Aria"
    assert labels(first) == ["◀", "1/1", "▶", "再生成"]
    await bot.stop()

    again = await open_rest_bot(settings, chain_for(llm_server))
    by_a_moderator = regenerate(first)
    pressed = await again.press(first, by_a_moderator, by=Person.BOB, permissions=MANAGE_MESSAGES)
    assert pressed["type"] == 7
    await again.settled()
    second = await showing(again, "2/2")
    assert (second.id, second.content, second.username) == (first.id, "Aria, twice.", "Aria")
    assert conversation(llm_server.requests[1]) == conversation(llm_server.requests[0])
    await again.press(second, previous(second))
    back = await showing(again, "1/2")
    assert (back.id, back.content) == (first.id, "Aria, once.")


async def test_regenerate_past_the_answers_takes_is_refused_and_asks_no_model(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """An answer keeps at most `TOMORI_MAX_TAKES` takes: Regenerate past them is refused, only
    to the presser and in their language, no model asked and the answer as it was; ◀ still
    shows the takes it keeps."""
    settings = settings_for(tmp_path, history_memory_channels=0, max_takes=2)
    bot = await open_rest_bot(settings, chain_for(llm_server))
    llm_server.script(answer("First take."), answer("Second take."), answer("One too many."))
    bot.say(f"{bot.mention()} tell me something")
    first = await showing(bot, "1/1")
    await bot.press(first, regenerate(first))
    await bot.settled()
    second = await showing(bot, "2/2")

    told(await bot.press(second, regenerate(second)), PressRefusal.ENOUGH)
    told(await bot.press(second, regenerate(second), locale="ja"), PressRefusal.ENOUGH, "ja")
    await bot.settled()
    assert len(llm_server.requests) == 2
    assert [(m.content, counter(m)) for m in bot.shown()] == [("Second take.", "2/2")]
    await bot.press(second, previous(second))
    assert (await showing(bot, "1/2")).content == "First take."


async def test_a_regeneration_that_stalls_mid_stream_is_no_take_and_the_answer_shows_its_own(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """A new take whose model stalls after some text, or that `/kill` stops mid-stream, did
    not end complete: it is not kept (no "2/2"), and the answer's message shows the take it
    showed before, its buttons back."""
    bot = await open_rest_bot(
        settings_for(tmp_path, history_memory_channels=0), chain_for(llm_server)
    )
    llm_server.script(answer("First take."), stalled_after("Half a take.\n\n"))
    bot.say(f"{bot.mention()} tell me something")
    first = await showing(bot, "1/1")
    await bot.tidied()
    await bot.command(ERRORS_SILENT, permissions=MANAGE_GUILD)
    pressed = await bot.press(first, regenerate(first))
    assert pressed["type"] == 7
    await until(lambda: any("Half a take." in v for v in bot.shown()[0].versions))
    await bot.settled()
    await until(lambda: counter(bot.shown()[0]) == "1/1")  # the buttons back, as they were
    await bot.tidied()
    [shown] = bot.shown()
    assert (shown.id, shown.content, counter(shown)) == (first.id, "First take.", "1/1")
    assert len(llm_server.requests) == 2

    llm_server.script(stalled_after("Stopped half.\n\n"))  # and one /kill stops mid-stream
    await bot.press(shown, regenerate(shown))
    await until(lambda: any("Stopped half." in v for v in bot.shown()[0].versions))
    await bot.kill()
    await bot.settled()
    await until(lambda: bot.shown()[0].content == "First take.")
    await until(lambda: counter(bot.shown()[0]) == "1/1")
    assert len(llm_server.requests) == 3


async def test_a_regeneration_pressed_just_before_a_new_message_gives_up(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Regenerate pressed a moment before another member's message: the channel went on, so
    the new take's turn writes nothing over the answer above the new question, and asks no
    model; the new message is answered below it."""
    bot = await open_rest_bot(
        settings_for(tmp_path, history_memory_channels=0), chain_for(llm_server)
    )
    llm_server.script(answer("First take."), answer("For Bob."), answer("Second take."))
    bot.say(f"{bot.mention()} tell me something")
    first = await showing(bot, "1/1")
    await bot.tidied()
    press = asyncio.ensure_future(bot.press(first, regenerate(first)))
    await asyncio.sleep(0)  # the press is sent: the message comes right after it
    bot.say(f"{bot.mention()} and me?", by=Person.BOB)
    assert (await press)["type"] == 7
    await bot.settled()
    await bot.tidied()
    assert bot.contents() == ["First take.", "For Bob."]
    assert len(llm_server.requests) == 2
    assert bot.shown()[0].payload["components"] == []  # frozen: no buttons on it


async def test_a_queued_questions_new_take_is_shown_the_answers_its_first_take_was(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Alice's question waited behind Bob's answer, and its first take was shown that answer
    (posted after her question): a new take of hers is shown it too, and never the answer's
    own text (what it replaces)."""
    bot = await open_rest_bot(
        settings_for(tmp_path, history_memory_channels=0), chain_for(llm_server)
    )
    thinking = asyncio.Event()
    llm_server.script(
        Reply(body=[hold_until(thinking), *answer("For Bob.").body]),  # posted after Alice's
        answer("First take."),
        answer("Second take."),
    )
    bot.say(f"{bot.mention()} me first", by=Person.BOB)
    await until(lambda: len(llm_server.requests) == 1)
    bot.say(f"{bot.mention()} and me?")  # queued behind Bob's answer
    await bot.admitted()
    thinking.set()
    first = await showing(bot, "1/1")
    assert bot.contents() == ["For Bob.", "First take."]
    assert ("assistant", "For Bob.") in conversation(llm_server.requests[1])

    await bot.press(first, regenerate(first))
    await bot.settled()
    second = await showing(bot, "2/2")
    assert (second.id, second.content) == (first.id, "Second take.")
    seen = conversation(llm_server.requests[2])
    assert seen == conversation(llm_server.requests[1])
    assert not any("First take." in content for _, content in seen)


async def test_a_press_right_behind_a_new_message_is_told_the_answer_stays_as_shown(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Regenerate or ◀ pressed right behind another member's message in the channel (whose
    freeze may still be under way) is told the conversation went on, never that a new take
    is being written; no model is asked, and the answer stays as shown, without buttons."""
    bot = await open_rest_bot(
        settings_for(tmp_path, history_memory_channels=0), chain_for(llm_server)
    )
    rounds = 4
    llm_server.script(
        answer("Answer 0."),
        answer("Answer 0, again."),
        *(answer(f"Answer {n}.") for n in range(1, rounds)),
    )
    for n in range(rounds):
        bot.say(f"{bot.mention()} question {n}")
        if n == 0:  # one answer with two takes, for ◀
            first = await showing(bot, "1/1")
            await bot.press(first, regenerate(first))
            await bot.settled()
            answered = await showing(bot, "2/2")
            button = previous(answered)
        else:
            answered = await showing(bot, "1/1")
            button = regenerate(answered)
        await bot.tidied()
        bot.say("nice", by=Person.BOB)  # not to the bot: it only freezes the takes
        told(await bot.press(answered, button), PressRefusal.FROZEN)
        await bot.tidied()
        assert bot.shown()[-1].payload["components"] == []
    assert len(llm_server.requests) == rounds + 1
    assert bot.contents() == ["Answer 0, again.", *(f"Answer {n}." for n in range(1, rounds))]


@pytest.mark.parametrize(
    ("limit", "spent"),
    [("user_daily_tokens", 5), ("user_cooldown_ms", 600_000)],
    ids=["tokens", "cooldown"],
)
async def test_a_moderators_regenerate_held_by_the_askers_limit_names_whose_it_is(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path, limit: str, spent: int
) -> None:
    """A new take counts against its asker: where their day's tokens are spent (or their
    cooldown runs), a moderator's Regenerate is refused naming the asker, in the moderator's
    language, never as if the limit were the moderator's own; the asker is told it is theirs.
    No model is asked."""
    settings = settings_for(tmp_path, history_memory_channels=0, **{limit: spent})
    bot = await open_rest_bot(settings, chain_for(llm_server))
    llm_server.script(answer("First take."), answer("Never asked."))
    bot.say(f"{bot.mention()} tell me something")
    first = await showing(bot, "1/1")
    await bot.tidied()
    asker = f"<@{Person.ALICE.id}>"
    for locale, yours in (("en", "You "), ("ja", "あなた")):
        by_a_moderator = await bot.press(
            first, regenerate(first), by=Person.BOB, permissions=MANAGE_MESSAGES, locale=locale
        )
        content = str(by_a_moderator["data"]["content"])
        assert by_a_moderator["data"]["flags"] & 64
        assert asker in content
        assert yours not in content
    by_the_asker = await bot.press(first, regenerate(first))
    assert asker not in str(by_the_asker["data"]["content"])
    assert "You " in str(by_the_asker["data"]["content"])
    await bot.tidied()
    assert len(llm_server.requests) == 1
    assert [(m.content, counter(m)) for m in bot.shown()] == [("First take.", "1/1")]


@pytest.mark.parametrize("cut", ["edit-failed", "stream-dropped"])
async def test_a_regeneration_cut_short_is_no_take_and_the_answer_shows_its_own(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    cut: str,
) -> None:
    """A new take whose delivery is cut (Discord fails the edits that write it into the
    answer, or the provider drops the stream after some text) did not end complete: it is
    not kept as a take (no "2/2"), and the answer's messages show the take they showed
    before, its buttons back, with nothing of the cut take left in the channel."""
    bot = await open_rest_bot(
        settings_for(tmp_path, history_memory_channels=0), chain_for(llm_server)
    )
    first_take = "First part of the first take.\n\nSecond part of the first take."
    llm_server.script(answer(first_take))
    bot.say(f"{bot.mention()} tell me something")
    first = await showing(bot, "1/1")
    await bot.tidied()
    await bot.command(ERRORS_SILENT, permissions=MANAGE_GUILD)
    if cut == "edit-failed":
        llm_server.script(in_parts("Cut take, first part.\n\n", "Cut take, second part.", gap=0.6))
        discord_rest.fail_next("message_edit", times=2)
    else:
        llm_server.script(Reply(body=[sse(chunk("Cut take, first part.\n\n")), drop()]))
    pressed = await bot.press(first, regenerate(first))
    assert pressed["type"] == 7
    await bot.settled()
    await until(lambda: counter(bot.shown()[0]) == "1/1")  # the buttons back, as they were
    await bot.tidied()
    assert [(m.id, m.content, counter(m)) for m in bot.shown()] == [(first.id, first_take, "1/1")]
    assert len(llm_server.requests) == 2


@pytest.mark.parametrize("who", ["bot", "persona"])
async def test_a_regeneration_carries_a_stop_button_that_stops_it(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path, who: str
) -> None:
    """A regeneration is an answer like any other, the bot's or a persona's: while it is
    written, the answer's first message carries its Stop button (in the edit that writes the
    take's first text, no request of its own); a press stops it, the provider's stream
    closed, and the answer shows the take it showed before, its take buttons back and the
    Stop button gone."""
    bot = await open_rest_bot(
        settings_for(tmp_path, history_memory_channels=0), chain_for(llm_server)
    )
    asked = f"{bot.mention()} tell me something"
    if who == "persona":
        bot.allow_webhooks()
        await bot.persona("add", name="Aria", prompt="You are Aria.")
        asked = "aria, tell me something"
    llm_server.script(answer("First take."), stalled_after("Half a take.\n\n"))
    bot.say(asked)
    first = await showing(bot, "1/1")
    await bot.tidied()
    route = "message_edit" if who == "bot" else "webhook"
    edits = bot.server.requests_by_route[route]
    await bot.press(first, regenerate(first))
    await until(lambda: bool(stop_buttons(posted(bot.server)[-1])))
    writing = posted(bot.server)[-1]
    assert (writing.id, writing.content) == (first.id, "Half a take.")
    assert bot.server.requests_by_route[route] == edits + 1  # the text and the button at once
    [stop] = stop_buttons(writing)
    pressed = await bot.press(writing, stop)
    assert pressed["type"] == 7  # stopped: the reply takes the Stop button away
    connection = llm_server.requests[1].connection
    assert connection is not None
    await until(lambda: connection.closed_at is not None)
    await bot.settled()
    await until(lambda: counter(posted(bot.server)[-1]) == "1/1")
    await bot.tidied()
    shown = posted(bot.server)[-1]
    assert (shown.id, shown.content, counter(shown)) == (first.id, "First take.", "1/1")
    assert not stop_buttons(shown)
    assert len(llm_server.requests) == 2
