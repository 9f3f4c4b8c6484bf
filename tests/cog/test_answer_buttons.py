"""An answer's buttons are never lost to an edit of its components, on the Discord-faithful
REST server with each library's real client: a second press of an answer's Stop button (a
double click, a moderator at the same moment, a stale client) is told the answer ended and
leaves its take buttons; the edits that take the Stop button off and put ◀ 1/1 ▶ Regenerate
on are asked once more when Discord answers 5xx or never answers, as every write is; and the
edit that puts back the take a stalled regeneration cut carries that take's text with its
buttons, so the channel (and the next turn) never keeps the cut text under a counter that
says otherwise; a swipe Discord lost a write of is taken back to the take shown, its presser
told.

Each channel's bucket is five times quicker than Discord's in the bot and the server alike
(`tests/support/pace.py`), as in tests/cog/test_takes.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import ChannelMessage, DiscordRestServer, RouteLimit
from tests.support.llm_server import LLMServer, Reply, hold_until, pause, sse, stall
from tests.support.openai_wire import chunk
from tests.support.pace import quicken_channel_pace
from tests.support.personas import personas_added
from tests.support.rest_bots import OpenRestBot, RestBot, posted
from tests.support.scripts import answer, finished, in_parts
from tests.support.waiting import until
from tomori.words import said, say
from tomori_cog.stop_buttons import CUSTOM_ID_PREFIX as STOP_PREFIX

WINDOW_S = 1.0
"""Each channel's write bucket in these tests: Discord's five writes, in a second."""


@pytest.fixture(autouse=True)
def quick_channels(discord_rest: DiscordRestServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bot paces each channel by `WINDOW_S` (and a margin), and the server holds it to
    that bucket (the subject is the buttons, not Discord's pace): still refused past five
    writes in it."""
    quicken_channel_pace(WINDOW_S * 1.05, monkeypatch)
    for route in ("message_create", "message_edit", "message_delete"):
        discord_rest.route_limits[route] = RouteLimit(5, WINDOW_S)


PATIENT = {"stream_first_token_timeout_ms": 60_000, "stream_sdk_call_timeout_ms": 60_000}
"""A held model is stopped by the test's press, never by its timeout."""


def custom_ids(message: ChannelMessage) -> list[str]:
    return [
        str(button["custom_id"])
        for row in message.payload["components"]
        for button in row["components"]
    ]


def stop_buttons(message: ChannelMessage) -> list[str]:
    return [c for c in custom_ids(message) if c.startswith(STOP_PREFIX)]


def take_labels(message: ChannelMessage) -> list[str]:
    """The take buttons' labels the message shows (◀, the counter, ▶, Regenerate)."""
    return [
        str(button["label"])
        for row in message.payload["components"]
        for button in row["components"]
        if not str(button["custom_id"]).startswith(STOP_PREFIX)
    ]


TAKE_ONE = ["◀", "1/1", "▶", "Regenerate"]


async def opened(
    open_rest_bot: OpenRestBot, llm: LLMServer, tmp_path: Path, **overrides: object
) -> RestBot:
    settings = settings_for(tmp_path, **{"history_memory_channels": 0, **overrides})
    return await open_rest_bot(settings, chain_for(llm))


async def live(bot: RestBot) -> ChannelMessage:
    """The message showing an answer's Stop button, once one does."""
    await until(lambda: any(stop_buttons(m) for m in posted(bot.server)))
    return next(m for m in posted(bot.server) if stop_buttons(m))


def regenerate(message: ChannelMessage) -> str:
    return next(c for c in custom_ids(message) if c.endswith(":regenerate"))


def ended_told(reply: dict[str, Any], server: DiscordRestServer) -> bool:
    """Whether the press was told, only to its presser, that the answer had ended."""
    ended = say(said("reply.stop.ended"), "en")
    data = reply.get("data") or {}
    if reply["type"] == 4:
        return bool(data["flags"] & 64) and data["content"] == ended
    followed = [m for sent in server.webhook_messages.values() for m in sent]
    return any(m.content == ended and m.payload["flags"] & 64 for m in followed)


@pytest.mark.parametrize("who", ["bot", "persona"])
async def test_a_second_press_of_stop_is_told_the_answer_ended_and_keeps_the_take_buttons(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path, who: str
) -> None:
    """Its asker presses an answer's Stop button: it stops, and its message gets ◀ 1/1 ▶
    Regenerate in place of Stop. The same button pressed again (a double click, a stale
    client) is told the answer has already ended, and the take buttons stay; the same for a
    stopped regeneration, whose take buttons come back."""
    bot = await opened(open_rest_bot, llm_server, tmp_path, **PATIENT)
    asked = f"{bot.mention()} tell me something"
    if who == "persona":
        await personas_added(bot, "Aria")
        asked = "aria, tell me something"
    never = asyncio.Event()
    llm_server.script(
        Reply(body=[sse(chunk("Paragraph.\n\n")), hold_until(never)]),
        Reply(body=[sse(chunk("Again.\n\n")), hold_until(never)]),
    )
    bot.say(asked)

    for round_ in range(2):  # the answer, then its regeneration
        message = await live(bot)
        [stop] = stop_buttons(message)
        assert (await bot.press(message, stop))["type"] == 7  # stopped
        await bot.tidied()
        assert take_labels(message) == TAKE_ONE
        again = await bot.press(message, stop)  # a double click, a stale client
        await bot.tidied()
        assert ended_told(again, bot.server)
        assert take_labels(message) == TAKE_ONE
        assert not stop_buttons(message)
        if round_ == 0:
            assert (await bot.press(message, regenerate(message)))["type"] == 7
    assert message.content == "Paragraph."


@pytest.mark.parametrize("status", [503, None], ids=["503", "dropped"])
async def test_the_edits_that_end_an_answers_buttons_are_asked_once_more(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    status: int | None,
) -> None:
    """An answer of three paragraphs carries its Stop button; as it ends, the next edit of a
    message (the Stop button's removal, or the take buttons' edit) fails once, Discord
    answering 503 or the connection dropped unanswered: asked once more, as every write is,
    the answer ends with ◀ 1/1 ▶ Regenerate on its last message and no Stop button left."""
    bot = await opened(open_rest_bot, llm_server, tmp_path)
    llm_server.script(answer("Para one.\n\nPara two.\n\nPara three.", pieces=6, gap=0.3))
    bot.say(f"{bot.mention()} tell me something")
    await live(bot)
    discord_rest.fail_next("message_edit", status=status)
    await bot.tidied()
    assert discord_rest.failed["message_edit"] == 1
    shown = posted(discord_rest)
    assert "".join(m.content for m in shown).count("Para") == 3
    assert take_labels(shown[-1]) == TAKE_ONE
    assert not any(stop_buttons(m) for m in shown)


STALLED = Reply(body=[sse(chunk("STALL partial line one.\n\n")), pause(0.3), stall()])
"""A new take whose model sends a paragraph, then nothing more."""


FAILED = {"buttons-once": 1, "text-twice": 2, "take-and-buttons": 3}
"""How many of the answer's edits Discord fails, in each case."""


@pytest.mark.parametrize("failing", list(FAILED))
async def test_a_cut_regeneration_puts_back_its_answers_take_with_its_buttons(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    failing: str,
) -> None:
    """A regeneration is cut (its model stalls after a paragraph, or Discord fails the edits
    that write it), and Discord fails edits of the answer as it is put back: once, the edit
    that puts its buttons back (asked once more); twice, the edit that writes its text back
    (the buttons' edit carries the text too); three times, the take's first edit, its second
    asking, and the buttons' edit. Each time the answer ends showing the take it showed, with
    ◀ 1/1 ▶ Regenerate and no Stop button, and the next turn's model reads that take."""
    bot = await opened(open_rest_bot, llm_server, tmp_path)
    cut = answer("SECOND take.") if failing == "take-and-buttons" else STALLED
    llm_server.script(answer("FIRST take."), cut, answer("Next answer."))
    bot.say(f"{bot.mention()} tell me something")
    await bot.tidied()
    [message] = bot.shown()
    assert take_labels(message) == TAKE_ONE
    if failing == "take-and-buttons":
        discord_rest.fail_next("message_edit", times=3)
    assert (await bot.press(message, regenerate(message)))["type"] == 7
    if failing != "take-and-buttons":
        await until(lambda: "STALL partial line one." in message.versions)
        if failing == "buttons-once":
            discord_rest.fail_next("message_edit", after=1)
        else:
            discord_rest.fail_next("message_edit", times=2)
    await bot.tidied()
    shown = [m for m in bot.shown() if m.content]  # (the stall's notice: an embed after it)
    assert [(m.content, take_labels(m), stop_buttons(m)) for m in shown] == [
        ("FIRST take.", TAKE_ONE, [])
    ]
    assert discord_rest.failed["message_edit"] == FAILED[failing]

    bot.say(f"{bot.mention()} and then?")
    await bot.tidied()
    said_before = [
        m["content"] for m in llm_server.requests[-1].body["messages"] if m["role"] == "assistant"
    ]
    assert said_before[-1] == "FIRST take."


async def test_a_stop_button_left_on_an_ended_answer_goes_with_a_press_that_is_told_so(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """Discord refuses (400) the edit that would put ◀ 1/1 ▶ Regenerate in the Stop button's
    place, so the ended answer still shows Stop: a press is told the answer ended, and its
    reply takes the button away."""
    bot = await opened(open_rest_bot, llm_server, tmp_path, **PATIENT)
    release = asyncio.Event()
    text = "Only paragraph."
    llm_server.script(Reply(body=[sse(chunk(f"{text}\n\n")), hold_until(release), *finished(text)]))
    bot.say(f"{bot.mention()} tell me something")
    message = await live(bot)
    discord_rest.fail_next("message_edit", status=400)
    release.set()
    await bot.tidied()
    assert discord_rest.failed["message_edit"] == 1
    [stop] = stop_buttons(message)
    pressed = await bot.press(message, stop)
    assert pressed["type"] == 7
    assert pressed["data"]["components"] == []
    await until(lambda: ended_told(pressed, discord_rest))


async def test_a_stale_press_of_an_earlier_stop_leaves_the_regenerations_own(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """A client that still shows the answer's first Stop button presses it while a
    regeneration runs in that message: the presser is told the answer ended, and the
    regeneration's own Stop button stays, and stops it."""
    bot = await opened(open_rest_bot, llm_server, tmp_path, **PATIENT)
    never = asyncio.Event()
    llm_server.script(
        answer("First take.", pieces=4, gap=0.3),
        Reply(body=[sse(chunk("Again.\n\n")), hold_until(never)]),
    )
    bot.say(f"{bot.mention()} tell me something")
    message = await live(bot)
    [earlier] = stop_buttons(message)
    await until(lambda: take_labels(message) == TAKE_ONE and not stop_buttons(message))

    assert (await bot.press(message, regenerate(message)))["type"] == 7
    await until(lambda: bool(stop_buttons(message)))
    [own] = stop_buttons(message)
    assert own != earlier
    stale = await bot.press(message, earlier)  # its reply is what would edit the message
    assert ended_told(stale, bot.server)
    assert stop_buttons(message) == [own]  # the regeneration's stays

    assert (await bot.press(message, own))["type"] == 7
    connection = llm_server.requests[1].connection
    assert connection is not None
    await until(lambda: connection.closed_by_client)
    await bot.tidied()
    assert message.content == "First take."
    assert take_labels(message) == TAKE_ONE


TAKE_TWO = ["◀", "2/2", "▶", "Regenerate"]


def told_after(server: DiscordRestServer, words: str) -> bool:
    """Whether a press was told `words` in a follow-up only its presser sees."""
    followed = [m for sent in server.webhook_messages.values() for m in sent]
    return any(m.content == words and m.payload["flags"] & 64 for m in followed)


def pressing(message: ChannelMessage, button: str) -> str:
    return next(c for c in custom_ids(message) if c.endswith(f":{button}"))


LOST = {
    "edit": ("message_edit", ("ALPHA one.",)),
    "post": ("message_create", ("ALPHA one.", "ALPHA two.", "ALPHA three.")),
}
"""The route whose two writes Discord fails as ◀ is pressed, and the take ◀ would show."""


@pytest.mark.parametrize("lost", list(LOST))
async def test_a_swipe_discord_lost_a_write_of_keeps_the_take_shown_and_tells_its_presser(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    lost: str,
) -> None:
    """An answer's second take shows, 2/2; its asker presses ◀, and Discord fails (5xx, asked
    again, failed again) the edit that writes the first take, or the post of its second
    message. The answer shows its second take under 2/2 still (any first-take text written
    back), its presser is told, only them, that the swipe could not be shown, and the next
    turn's model reads the take shown."""
    route, first_take = LOST[lost]
    bot = await opened(open_rest_bot, llm_server, tmp_path)
    llm_server.script(
        in_parts(*(f"{part}\n\n" for part in first_take), gap=0.6),
        answer("BETA only."),
        answer("Next answer."),
    )
    bot.say(f"{bot.mention()} tell me something")
    await bot.tidied()
    assert [m.content for m in bot.shown()] == list(first_take)
    last = bot.shown()[-1]
    assert (await bot.press(last, regenerate(last)))["type"] == 7
    await until(lambda: [take_labels(m) for m in bot.shown()] == [TAKE_TWO])
    await bot.tidied()
    [message] = bot.shown()
    assert message.content == "BETA only."

    discord_rest.fail_next(route, times=2)
    await bot.press(message, pressing(message, "previous"))
    not_shown = say(said("reply.take.not_shown"), "en")
    await until(lambda: told_after(discord_rest, not_shown))
    await bot.tidied()
    assert discord_rest.failed[route] == 2
    assert [(m.content, take_labels(m)) for m in bot.shown()] == [("BETA only.", TAKE_TWO)]

    bot.say(f"{bot.mention()} and then?")
    await bot.tidied()
    said_before = [
        m["content"] for m in llm_server.requests[-1].body["messages"] if m["role"] == "assistant"
    ]
    assert said_before[-1] == "BETA only."


async def test_a_personas_take_swiped_back_is_its_own_in_the_next_request(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """A persona's answer in two messages, regenerated into one, then swiped back: the swipe
    posts the take's second message again, through the persona's webhook, and the next turn's
    model reads both as the persona's own answer, not as an unknown webhook's words."""
    bot = await opened(open_rest_bot, llm_server, tmp_path)
    await personas_added(bot, "Aria")
    llm_server.script(
        in_parts("Aria one.\n\n", "Aria two.\n\n", gap=0.6),
        answer("Aria again."),
        answer("Next answer."),
    )
    bot.say("aria, hello")
    await bot.tidied()
    assert [m.content for m in arias(bot)] == ["Aria one.", "Aria two."]
    last = arias(bot)[-1]
    assert (await bot.press(last, regenerate(last)))["type"] == 7
    await until(lambda: [take_labels(m) for m in arias(bot)] == [TAKE_TWO])
    await bot.tidied()
    [message] = arias(bot)
    await bot.press(message, pressing(message, "previous"))
    await until(lambda: [m.content for m in arias(bot)] == ["Aria one.", "Aria two."])
    await bot.tidied()

    bot.say("aria, and then?")
    await bot.tidied()
    seen = [(m["role"], m["content"]) for m in llm_server.requests[-1].body["messages"]]
    assert ("assistant", "Aria one.\nAria two.") in seen
    assert not any("webhook" in text for _, text in seen)


def arias(bot: RestBot) -> list[ChannelMessage]:
    """The messages Aria (a persona, through the bot's webhook) shows."""
    return [m for m in posted(bot.server) if m.username == "Aria"]
