"""Personas through the cog, on both libraries, against the faithful Discord REST server: an
admin adds one with `/tomori persona add`; a message naming it, or replying to its message, is
answered by it, under its name and avatar, through the webhook the bot created in the channel
(or, where it cannot post through one, as the bot with its name shown)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.support.bots import Library
from tests.support.cog_settings import SHORT_BUDGETS, chain_for, settings_for
from tests.support.databases import DatabaseUnderTest, sqlite_database
from tests.support.discord_rest import ChannelMessage, DiscordRestServer
from tests.support.llm_server import LLMServer, Reply, hold_until, sse
from tests.support.openai_wire import chunk
from tests.support.personas import personas_added, reading_over_rest
from tests.support.rest_bots import (
    OpenRestBot,
    RestBot,
    arrive,
    conversation,
    posted,
    said,
    start_rest_bot,
    user_message,
)
from tests.support.scripts import answer, finished
from tests.support.world import (
    CHANNEL_ID,
    CHANNEL_IDS,
    GUILD_ID,
    Person,
    channel_allowing_the_bot,
)
from tests.support.write_lock import write_lock_held

ARIA_AVATAR = "https://images.example/aria.png"
CAROL = 3_000_000_000_000_000_333
DAVE = 3_000_000_000_000_000_444


async def settle(bot: RestBot) -> None:
    async with asyncio.timeout(10):
        await bot.settled(CHANNEL_ID)


async def test_a_persona_added_by_command_answers_under_its_name_and_avatar_when_named_or_replied(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path, history_memory_channels=500)
    bot.allow_webhooks()
    reply = await bot.persona(
        "add", name="Aria", prompt="You are Aria, a cheerful bard.", avatar=ARIA_AVATAR
    )
    assert "Aria joined this server" in said(reply)
    llm_server.script(answer("Hello, I am Aria!"), answer("Still me, Aria."))

    bot.say("good evening ARIA, sing for us")
    await settle(bot)
    first = posted(discord_rest)
    assert [(m.username, m.content, m.avatar_url) for m in first] == [
        ("Aria", "Hello, I am Aria!", ARIA_AVATAR)
    ]
    webhooks = discord_rest.webhooks_of(CHANNEL_ID)
    assert len(webhooks) == 1  # the bot's own: created by it, for its application
    assert first[0].webhook_id == int(webhooks[0]["id"])
    assert webhooks[0]["application_id"] == str(bot.bot.user.id)
    assert conversation(llm_server.requests[0])[0] == ("system", "You are Aria, a cheerful bard.")

    payload = user_message("and another?", channel=CHANNEL_ID)  # a reply names no one
    payload["message_reference"] = {"message_id": str(first[0].id), "channel_id": str(CHANNEL_ID)}
    payload["referenced_message"] = first[0].payload
    discord_rest.add_message(payload)
    arrive(bot.bot, payload)
    await settle(bot)
    assert [m.content for m in posted(discord_rest)] == ["Hello, I am Aria!", "Still me, Aria."]
    assert posted(discord_rest)[1].username == "Aria"
    seen = conversation(llm_server.requests[1])
    assert ("assistant", "Hello, I am Aria!") in seen  # its own message is its own turn
    assert len(discord_rest.webhooks_of(CHANNEL_ID)) == 1  # reused
    assert discord_rest.rate_limited == {"global": 0, "user": 0, "shared": 0}


async def test_the_webhooks_token_rests_sealed_in_the_database(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """Read from the database file alone, the token would let anyone post in the channel
    under any name, @everyone included."""
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    await personas_added(bot, "Aria")
    llm_server.script(answer("Hello!"))
    bot.say("hi aria")
    await settle(bot)
    assert [m.username for m in posted(discord_rest)] == ["Aria"]
    [webhook] = discord_rest.webhooks_of(CHANNEL_ID)
    await bot.stop()
    database = (tmp_path / "tomori.db").read_bytes()
    assert webhook["token"].encode() not in database
    assert b"sealed:v1:" in database


async def test_three_personas_named_at_once_answer_in_order_each_seeing_the_ones_before(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    await personas_added(bot, "Aria", "Bex", "Cy")
    await bot.persona("add", name="Dot", prompt="You are Dot.", triggers="dotty, d0t")
    llm_server.script(answer("Cy here."), answer("Bex says hi."), answer("Aria waves."))

    bot.say("cy, bex, aria and dotty: good morning")  # four named: the first three answer
    await settle(bot)
    shown = posted(discord_rest)
    assert [(m.username, m.content) for m in shown] == [
        ("Cy", "Cy here."),
        ("Bex", "Bex says hi."),
        ("Aria", "Aria waves."),
    ]
    assert len(llm_server.requests) == 3
    second, third = (conversation(r) for r in llm_server.requests[1:])
    assert second[0] == ("system", "You are Bex.")
    # after the message, each earlier answer under its persona's name (one user turn: the
    # provider joins consecutive turns of one role)
    assert second[-1] == ("user", "alice: cy, bex, aria and dotty: good morning\nCy: Cy here.")
    assert third[-1][1].endswith("good morning\nCy: Cy here.\nBex: Bex says hi.")


async def test_an_answer_naming_another_persona_draws_it_in_within_the_budget(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path, max_bot_turns=2)
    await personas_added(bot, "Aria", "Bex")
    llm_server.script(
        answer("What do you think, Bex?"),
        answer("Aria, I agree."),
        answer("Thanks Bex!"),
        answer("Anytime, Aria."),  # past the budget of two: never asked
    )
    bot.say("aria, start us off")
    await settle(bot)
    assert [m.username for m in posted(discord_rest)] == ["Aria", "Bex", "Aria"]
    assert len(llm_server.requests) == 3


async def test_personas_stop_answering_once_the_servers_day_is_spent_and_say_so(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path, server_daily_tokens=12)
    await personas_added(bot, "Aria", "Bex", "Cy")
    llm_server.script(answer("Cy here."), answer("Bex says hi."), answer("Aria waves."))
    bot.say("cy, bex and aria: good morning")
    await settle(bot)
    assert len(llm_server.requests) == 1  # 12 tokens: the server's day is spent after Cy
    shown = posted(discord_rest)
    assert [(m.username, m.content) for m in shown if m.webhook_id] == [("Cy", "Cy here.")]
    [notice] = [m.payload["embeds"][0] for m in shown if not m.webhook_id]
    assert notice["title"] == "Daily Limit Reached"
    assert notice["description"].startswith("This server has used the tokens it has for today")


async def test_without_manage_webhooks_a_persona_speaks_as_the_bot_with_its_name_shown(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    await bot.persona("add", name="Aria", prompt="You are Aria.")
    llm_server.script(answer("Hi there."), answer("Again."))
    with caplog.at_level(logging.WARNING, logger="tomori_cog.webhooks"):
        bot.say("hi aria")
        await settle(bot)
        bot.say("aria?")
        await settle(bot)
    assert bot.contents() == ["**Aria:** Hi there.", "**Aria:** Again."]
    assert discord_rest.requests_by_route["webhook_create"] == 0
    told = [r for r in caplog.records if "Manage Webhooks" in r.getMessage()]
    assert len(told) == 1  # once per channel
    # the second turn showed the model its earlier message as its own, without the name
    assert ("assistant", "Hi there.") in conversation(llm_server.requests[1])


async def test_a_refused_webhook_falls_back_and_a_deleted_one_is_created_anew(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    await personas_added(bot, "Aria")
    llm_server.script(answer("One."), answer("Again."), answer("Two."), answer("Three."))

    discord_rest.refuse_webhooks(CHANNEL_ID)  # the permission is cached; Discord says 403
    bot.say("aria, one")
    await settle(bot)
    bot.say("aria, again")
    await settle(bot)
    assert bot.contents() == ["**Aria:** One.", "**Aria:** Again."]
    assert discord_rest.requests_by_route["webhook_create"] == 1  # a refusal is not asked again

    discord_rest._webhooks_refused.clear()
    bot.chat.webhooks.close()  # as after a restart: the store is read again
    bot.chat.webhooks.open(bot.chat.runtime.database)
    bot.say("aria, two")
    await settle(bot)
    (webhook,) = discord_rest.webhooks_of(CHANNEL_ID)
    discord_rest.delete_webhook(int(webhook["id"]))  # someone deleted it: 10015 from now on
    bot.say("aria, three")
    await settle(bot)
    shown = posted(discord_rest)
    assert [(m.username, m.content) for m in shown[2:]] == [("Aria", "Two."), ("Aria", "Three.")]
    (again,) = discord_rest.webhooks_of(CHANNEL_ID)
    assert again["id"] != webhook["id"]
    assert shown[3].webhook_id == int(again["id"])


@pytest.mark.parametrize("library", ["nextcord"])  # the pacing is the cog's, not the library's
async def test_a_long_persona_answer_keeps_to_the_webhooks_bucket(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    await personas_added(bot, "Aria")
    paragraphs = [f"Verse {n}. " + "la " * 600 for n in range(6)]
    llm_server.script(answer("\n\n".join(paragraphs), pieces=40))
    bot.say("aria, the long song please")
    async with asyncio.timeout(20):
        await bot.settled(CHANNEL_ID)
    shown = posted(discord_rest)
    assert len(shown) >= 6  # more than one webhook bucket's worth
    assert all(m.username == "Aria" for m in shown)
    assert discord_rest.rate_limited_by_route["webhook"] == 0
    assert "".join(m.content for m in shown).count("Verse") == 6


async def test_a_reply_to_a_personas_message_is_answered_by_it_from_another_process(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    database: DatabaseUnderTest,
) -> None:
    """Which persona posted which message, and the channel's webhook, are the database's: a
    second bot process (or the first, restarted) knows them without having seen them."""
    settings = database.settings(**SHORT_BUDGETS, history_memory_channels=0)
    first = await open_rest_bot(settings, chain_for(llm_server))
    first.allow_webhooks()
    await first.persona("add", name="Aria", prompt="You are Aria.", triggers="bard")
    llm_server.script(answer("A song."), answer("Another song."))
    first.say("bard, a song")
    await settle(first)

    second = await open_rest_bot(settings, chain_for(llm_server))
    second.allow_webhooks()
    (earlier,) = posted(discord_rest)
    payload = user_message("more!", channel=CHANNEL_ID)
    payload["message_reference"] = {"message_id": str(earlier.id), "channel_id": str(CHANNEL_ID)}
    payload["referenced_message"] = earlier.payload
    discord_rest.add_message(payload)
    arrive(second.bot, payload)
    await settle(second)
    later = posted(discord_rest)[1]
    assert (later.username, later.content) == ("Aria", "Another song.")
    assert later.webhook_id == earlier.webhook_id
    assert discord_rest.requests_by_route["webhook_create"] == 1


def logged(caplog: pytest.LogCaptureFixture, words: str) -> bool:
    return any(words in record.getMessage() for record in caplog.records)


def reply_to(message: ChannelMessage, text: str) -> dict[str, Any]:
    """A member's reply to `message` that names no one, as Discord sends it (the message it
    replies to along)."""
    payload = user_message(text, channel=CHANNEL_ID)
    payload["message_reference"] = {"message_id": str(message.id), "channel_id": str(CHANNEL_ID)}
    payload["referenced_message"] = message.payload
    return payload


async def test_a_persona_message_recorded_through_a_database_blip_is_answered_when_replied_to(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another connection holds SQLite's write lock past the busy timeout just as the persona's
    answer ends: the record of who posted it waits the blip out instead of being dropped."""
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path, db_busy_timeout_ms=100)
    await personas_added(bot, "Aria")
    release = asyncio.Event()
    song = "A song for you."
    llm_server.script(
        Reply(body=[sse(chunk(f"{song}\n\n")), hold_until(release), *finished(song)]),
        answer("Another song."),
    )
    bot.say("Aria, sing")
    async with asyncio.timeout(10):
        while not posted(discord_rest):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    with caplog.at_level(logging.WARNING):
        async with write_lock_held(tmp_path / "tomori.db"):
            release.set()  # the answer ends: its record meets the lock
            async with asyncio.timeout(10):  # it failed once (and is retried, or dropped)
                while not logged(caplog, "Aria's messages"):  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
        await settle(bot)

    (sung,) = posted(discord_rest)
    recorded = await sqlite_database(tmp_path).rows("SELECT name_key FROM persona_messages")
    assert recorded == [("aria",)]
    payload = reply_to(sung, "and another?")
    discord_rest.add_message(payload)
    arrive(bot.bot, payload)
    await settle(bot)
    later = posted(discord_rest)[1]
    assert (later.username, later.content) == ("Aria", "Another song.")


async def test_a_reply_to_a_persona_message_the_store_forgot_is_answered_by_the_name_shown(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """Its record gone (kept for a while only, or lost to an outage longer than a blip), a
    message the bot's webhook posted still names its persona: the reply is answered by it."""
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    await personas_added(bot, "Aria")
    await bot.sprite("add", persona="Aria", label="happy", avatar=ARIA_AVATAR)
    llm_server.script(answer("Aria (happy): A song."), answer("Another song."))
    bot.say("Aria, sing")
    await settle(bot)
    (sung,) = posted(discord_rest)
    assert sung.username == "Aria (happy)"
    await sqlite_database(tmp_path).execute("DELETE FROM persona_messages")

    payload = reply_to(sung, "and another?")
    discord_rest.add_message(payload)
    arrive(bot.bot, payload)
    await settle(bot)
    later = posted(discord_rest)[1]
    assert (later.username, later.content) == ("Aria", "Another song.")


async def test_the_webhooks_of_channels_discord_says_are_gone_are_forgotten(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """A row per channel the personas ever spoke in would otherwise outlive the channels: a
    deleted channel's row goes (CHANNEL_DELETE), and every row of a server the bot left
    (GUILD_DELETE)."""
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    await bot.persona("add", name="Aria", prompt="You are Aria.")
    llm_server.script(answer("Hello here."), answer("Hello there."))
    for channel in CHANNEL_IDS[:2]:
        bot.allow_webhooks(channel)
        bot.say("Aria, hi", channel=channel)
        async with asyncio.timeout(10):
            await bot.settled(channel)
    database = sqlite_database(tmp_path)
    stored = "SELECT channel_id FROM channel_webhooks ORDER BY channel_id"
    assert await database.rows(stored) == [(str(CHANNEL_IDS[0]),), (str(CHANNEL_IDS[1]),)]

    bot.bot._connection.parse_channel_delete(channel_allowing_the_bot(0, CHANNEL_IDS[0]))
    async with asyncio.timeout(10):
        while await database.rows(stored) != [(str(CHANNEL_IDS[1]),)]:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    bot.bot._connection.parse_guild_delete({"id": str(GUILD_ID)})  # the bot was removed
    async with asyncio.timeout(10):
        while await database.rows(stored):  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_persona_commands_check_and_list(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    assert "Discord does not allow" in said(
        await bot.persona("add", name="discord fan", prompt="x")
    )
    await bot.persona("add", name="Aria", prompt="You are Aria.")
    assert "already" in said(await bot.persona("add", name="ARIA", prompt="Another."))
    changed = said(await bot.persona("edit", name="aria", triggers="bard, singer"))
    assert "called by bard, singer" in changed
    listed = said(await bot.persona("list"))
    assert "**Aria**: called by bard, singer" in listed
    assert "left this server" in said(await bot.persona("remove", name="Aria"))
    assert "no personas" in said(await bot.persona("list"))


async def test_a_persona_cannot_pass_for_a_member_of_the_server(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """No persona takes a member's name, as any of the names they go by here (alice's
    username; carol's nickname, global name and username), nor in letters that look alike (a
    capital I for the l, a 1 for the i); a name no member goes by is added."""
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    bot.member_joins(CAROL, "carol_1987", global_name="Caro", nick="Mira")
    for name in ("Alice", "AIice", "Mira", "M1ra", "Car0", "carol_1987"):
        refused = said(await bot.persona("add", name=name, prompt="I am them."))
        assert refused == (
            f"{name} would pass for a member of this server: a persona may not be named like"
            " someone here, in any letters that look alike."
        )
    assert "Aria joined this server" in said(await bot.persona("add", name="Aria", prompt="x"))
    assert said(await bot.persona("list")).count("**") == 2  # Aria, alone


async def test_a_persona_cannot_pass_for_the_bot_or_a_member_in_any_look_alike(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Letters of other scripts drawn as Latin ones (a Cherokee T; DAVE in Cherokee), small
    capitals, "rn" for an m, and the bot's name with a bot-ish word beside it all read as
    the bot, or as a member: each is refused."""
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    bot.member_joins(DAVE, "dave", global_name=None, nick=None)
    as_the_bot = (
        "\u13a2omori",  # Cherokee letter I, drawn as a T
        "\u1d1b\u1d0f\u1d0d\u1d0f\u0280\u026a",  # in small capitals
        "Tornori",
        "Tomori Bot",
        "Tomori-bot",
        "Tomori (bot)",
        "Tomori APP",
        "Tomori!",  # marks, symbols and other scripts' letters a trial found passing
        "Tomori | bot",
        "Tomori\u2122",
        "\ua4d4omori",
        "T\u0585m\u0585ri",
    )
    for name in as_the_bot:
        refused = said(await bot.persona("add", name=name, prompt="I am the bot."))
        assert refused == f"{name} would pass for the bot itself (Tomori).", name
    dave = "\u13a0\u13aa\u13d9\u13ac"  # Cherokee letters A, GO, DO, GV: D, A, V, E
    for as_dave in (dave, "dave 1", "dave!", "\u146fave", "d\u0251ve"):
        refused = said(await bot.persona("add", name=as_dave, prompt="I am dave."))
        assert refused.startswith(f"{as_dave} would pass for a member of this server")
    # drawn blank on Discord, so the name reads as the bot's or dave's own
    for blank in ("Tomori\u3164", "\u3164Tomori", "Tomori\uffa0", "dave\u115f"):
        refused = said(await bot.persona("add", name=blank, prompt="I am someone."))
        assert "invisible" in refused, blank
    assert "no personas" in said(await bot.persona("list"))


async def test_a_persona_cannot_pass_for_a_member_seen_speaking_lately(
    library: Library, llm_server: LLMServer, discord_rest: DiscordRestServer, tmp_path: Path
) -> None:
    """Without the members intent (bot.py's default) the library caches few members: the
    authors of the messages the cog keeps from the gateway count too."""
    settings = settings_for(tmp_path)
    chain = chain_for(llm_server)
    bot = await start_rest_bot(library, discord_rest, settings, chain, members_intent=False)
    try:
        bot.say("hello all", by=Person.BOB)
        await bot.admitted()
        refused = said(await bot.persona("add", name="B0b", prompt="I am bob."))
        assert refused.startswith("B0b would pass for a member of this server")
    finally:
        await bot.stop()


async def test_no_log_line_carries_a_webhook_or_interaction_token(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Both libraries log each request's URL at DEBUG, and a webhook's URL holds its token (a
    key to post as any name in the channel), an interaction's reply URL the interaction's."""
    with caplog.at_level(logging.DEBUG):
        bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
        await personas_added(bot, "Aria")
        llm_server.script(answer("Hello from Aria."))
        bot.say("aria, hello")
        await settle(bot)
        assert [m.username for m in posted(discord_rest)] == ["Aria"]
    tokens = [w["token"] for w in discord_rest.webhooks_of(CHANNEL_ID)]
    tokens += list(discord_rest.webhook_messages)  # the interactions' tokens
    assert len(tokens) == 2
    logged = [record.getMessage() + (record.exc_text or "") for record in caplog.records]
    assert any("/webhooks/" in line for line in logged)  # the library logged the post
    assert any("/interactions/" in line for line in logged)  # and the command's answer
    for token in tokens:
        assert not [line for line in logged if token in line]
    await bot.stop()
    assert logging.getLogRecordFactory() is logging.LogRecord  # taken away with the cog


async def test_a_personas_models_are_only_those_the_author_allows(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """TOMORI_ALLOWED_MODELS unset: admins may choose only the bot's own models."""
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    refused = said(await bot.persona("add", name="Aria", prompt="x", models="openai:gpt-4o"))
    assert "openai:gpt-4o is not among the models this bot allows" in refused
    await bot.persona("add", name="Aria", prompt="You are Aria.")
    refused = said(await bot.persona("edit", name="Aria", models="openai:gpt-4o"))
    assert "openai:gpt-4o is not among the models this bot allows" in refused
    refused = said(await bot.persona("edit", name="Aria", models="openai:test-model+vision"))
    assert "openai:test-model may not be sent images (+vision) on this bot" in refused
    listing = said(await bot.persona("list"))
    assert "openai:gpt-4o" not in listing
    assert "+vision" not in listing


async def test_kill_while_the_first_persona_speaks_stops_the_ones_after_it(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path)
    await personas_added(bot, "Aria", "Bex")
    verses = "\n\n".join(f"Verse {n}, la la la." for n in range(20))
    llm_server.script(answer(verses, pieces=20, gap=0.1), answer("Never said."))
    bot.say("aria then bex")
    async with asyncio.timeout(5):
        while not llm_server.requests:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.3)  # Aria is mid-song
    await bot.kill()
    await settle(bot)
    assert {m.username for m in posted(discord_rest)} <= {"Aria"}
    assert "Verse 19" not in " ".join(m.content for m in posted(discord_rest))
    assert len(llm_server.requests) == 1  # Bex was never asked


async def test_in_edit_mode_a_persona_grows_its_message_through_the_webhook(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path, delivery="edit")
    await personas_added(bot, "Aria")
    llm_server.script(answer("First line.\nSecond line.\nThird line.", pieces=3, gap=0.4))
    bot.say("aria, three lines")
    await settle(bot)
    (shown,) = posted(discord_rest)
    assert (shown.username, shown.content) == ("Aria", "First line.\nSecond line.\nThird line.")
    assert len(shown.versions) >= 2  # sent, then edited through the webhook
    assert discord_rest.requests_by_route["message_edit"] == 0


async def test_the_bot_never_answers_its_own_personas_messages(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await reading_over_rest(open_rest_bot, llm_server, tmp_path, reply_to_bots=True)
    await personas_added(bot, "Aria", "Bex")
    llm_server.script(answer("Bex, say hi."), answer("Hi there."))  # Aria draws Bex in
    bot.say("aria?")
    await settle(bot)
    echoes = posted(discord_rest)
    assert [m.username for m in echoes] == ["Aria", "Bex"]
    for echo in echoes:  # the gateway's echoes of the webhook's messages: Aria's names Bex
        arrive(bot.bot, echo.payload)
    await settle(bot)
    assert len(llm_server.requests) == 2
