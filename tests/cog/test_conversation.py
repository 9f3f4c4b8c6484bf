"""What the model is shown of the conversation, through the cog in a nextcord bot: reply chains
older than the history, a thread's starter message, other bots' embeds; never the cog's own
notices."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.conversation import forum_payload, quoted, shown, thread_payload
from tests.support.llm_server import LLMServer, Reply
from tests.support.nextcord_fake import (
    ALICE,
    BOB,
    BOT_ID,
    CHANNEL_ID,
    GUILD_ID,
    NextcordBot,
    OpenNextcord,
    message_payload,
    snowflake,
    user_payload,
)
from tests.support.scripts import answer, http_error

OTHER_BOT = 5_000_000_000_000_000_005
FORUM_ID = CHANNEL_ID + 100


def seed(
    nc: NextcordBot,
    content: str,
    *,
    author: int = ALICE,
    name: str = "alice",
    bot: bool = False,
    channel: int = CHANNEL_ID,
    replying_to: dict[str, Any] | None = None,
    embeds: list[dict[str, Any]] | None = None,
    message_id: int | None = None,
) -> dict[str, Any]:
    """A message already in the channel before the test's trigger (no event: nobody asked)."""
    payload = message_payload(
        channel,
        user_payload(author, name, bot=bot),
        content,
        embeds=embeds,
        referenced=None if replying_to is None else quoted(replying_to),
    )
    if message_id is not None:
        payload["id"] = str(message_id)
    nc.discord.add(channel, payload)
    return payload


@pytest.fixture
async def nc(tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord) -> NextcordBot:
    return await open_nextcord(settings_for(tmp_path, history_limit=3), chain_for(llm_server))


# -- reply chains -----------------------------------------------------------------------------


async def test_a_reply_to_a_message_older_than_the_history_brings_it_and_its_chain_in_order(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    question = seed(nc, "which port does staging use?")
    reply = seed(nc, "5433, since the move", author=BOB, name="bob", replying_to=question)
    for n in range(5):
        seed(nc, f"chatter {n}")
    llm_server.script(answer("Still 5433."))
    nc.say(f"{nc.mention()} is that still right?", replying_to=quoted(reply))
    await nc.settled()
    assert shown(llm_server) == [
        "alice: which port does staging use?",
        "bob: 5433, since the move",
        "alice: chatter 2",
        "alice: chatter 3",
        "alice: chatter 4",
        "alice: @Tomori is that still right?",
    ]
    assert nc.discord.contents() == ["Still 5433."]


async def test_a_reply_to_an_old_answer_of_the_bot_shows_it_as_the_assistants(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    question = seed(nc, "Tomori, name a prime")
    old_answer = seed(nc, "7", author=BOT_ID, name="Tomori", bot=True, replying_to=question)
    for n in range(4):
        seed(nc, f"chatter {n}")
    llm_server.script(answer("11."))
    nc.say("another one?", replying_to=quoted(old_answer))
    await nc.settled()
    messages = llm_server.requests[0].body["messages"]
    assert [(m["role"], m["content"]) for m in messages[1:3]] == [
        ("user", "alice: Tomori, name a prime"),
        ("assistant", "7"),
    ]
    assert nc.discord.contents() == ["7", "11."]


async def test_a_chain_running_through_the_history_shows_each_message_once(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    first = seed(nc, "the deploy failed")
    for n in range(3):
        seed(nc, f"chatter {n}")
    recent = seed(nc, "did anyone look?", author=BOB, name="bob", replying_to=first)
    llm_server.script(answer("Looking."))
    nc.say(f"{nc.mention()} can you?", replying_to=quoted(recent))
    await nc.settled()
    assert shown(llm_server) == [
        "alice: the deploy failed",
        "alice: chatter 1",
        "alice: chatter 2",
        "bob: did anyone look?",
        "alice: @Tomori can you?",
    ]


async def test_the_chain_is_followed_no_further_than_its_limit(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    settings = settings_for(tmp_path, history_limit=1, reply_chain_limit=2)
    nc = await open_nextcord(settings, chain_for(llm_server))
    one = seed(nc, "one")
    two = seed(nc, "two", replying_to=one)
    three = seed(nc, "three", replying_to=two)
    seed(nc, "chatter")
    llm_server.script(answer("Ok."))
    nc.say(f"{nc.mention()} four", replying_to=quoted(three))
    await nc.settled()
    assert shown(llm_server) == [
        "alice: two",
        "alice: three",
        "alice: chatter",
        "alice: @Tomori four",
    ]


async def test_a_deleted_or_unreadable_message_ends_the_chain_and_the_turn_is_answered(
    nc: NextcordBot, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    never_stored = message_payload(CHANNEL_ID, user_payload(BOB, "bob"), "deleted long ago")
    orphan = message_payload(
        CHANNEL_ID,
        user_payload(ALICE, "alice"),
        "an answer to something gone",
        referenced=never_stored,
    )
    orphan["referenced_message"] = None  # how Discord shows a reply whose parent was deleted
    nc.discord.add(CHANNEL_ID, orphan)
    follow_up = seed(nc, "and a follow-up", author=BOB, name="bob", replying_to=orphan)
    unreadable = seed(nc, "an answer to something unreadable", replying_to=never_stored)
    for n in range(3):
        seed(nc, f"chatter {n}")
    llm_server.script(answer("One."), answer("Two."))
    caplog.set_level(logging.INFO, logger="tomori_cog.reading.history")
    nc.say(f"{nc.mention()} first", replying_to=quoted(follow_up))
    await nc.settled()
    nc.say(f"{nc.mention()} second", replying_to=quoted(unreadable))
    await nc.settled()
    assert shown(llm_server, 0)[:2] == [
        "alice: an answer to something gone",
        "bob: and a follow-up",
    ]
    assert shown(llm_server, 1)[0] == "alice: an answer to something unreadable"
    assert "deleted long ago" not in str(llm_server.requests[1].body)
    assert nc.discord.contents() == ["One.", "Two."]
    assert f"message {orphan['id']} replies to a deleted message" in caplog.text
    assert f"replies to message {never_stored['id']}, which cannot be read" in caplog.text


# -- threads and forum posts ------------------------------------------------------------------


def open_thread(nc: NextcordBot, thread_id: int, parent_id: int) -> None:
    """THREAD_CREATE, as the gateway announces a thread (or a forum post) the bot can see."""
    nc.bot._connection.parse_thread_create(thread_payload(thread_id, GUILD_ID, parent_id, ALICE))


def open_forum_post(nc: NextcordBot) -> int:
    """A forum, and a post opened in it, as the gateway announces them; returns the post's ID
    (which is its first message's too)."""
    nc.bot._connection.parse_channel_create(forum_payload(FORUM_ID, GUILD_ID))
    post_id = snowflake()
    open_thread(nc, post_id, FORUM_ID)
    return post_id


async def test_in_a_thread_the_history_is_the_threads_and_its_starter_is_shown(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    starter = seed(nc, "release checklist for 2.0")
    thread_id = int(starter["id"])  # a thread started from a message takes its ID
    open_thread(nc, thread_id, CHANNEL_ID)
    seed(nc, "meanwhile in the channel")
    for n in range(5):
        seed(nc, f"step {n} done", channel=thread_id)
    llm_server.script(answer("Two steps left."))
    nc.say(f"{nc.mention()} what is left?", channel=thread_id)
    await nc.settled((thread_id,))
    assert shown(llm_server) == [
        "alice: release checklist for 2.0",
        "alice: step 2 done",
        "alice: step 3 done",
        "alice: step 4 done",
        "alice: @Tomori what is left?",
    ]
    assert nc.discord.contents(thread_id) == ["Two steps left."]


async def test_a_forum_posts_first_message_is_shown_however_long_the_post(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    post_id = open_forum_post(nc)
    seed(nc, "my build fails on arm64", channel=post_id, message_id=post_id)
    for n in range(5):
        seed(nc, f"tried fix {n}", author=BOB, name="bob", channel=post_id)
    llm_server.script(answer("Pin the toolchain."))
    nc.say(f"{nc.mention()} any idea?", channel=post_id)
    await nc.settled((post_id,))
    assert shown(llm_server) == [
        "alice: my build fails on arm64",
        "bob: tried fix 2",
        "bob: tried fix 3",
        "bob: tried fix 4",
        "alice: @Tomori any idea?",
    ]


async def test_a_short_forum_post_shows_its_first_message_once(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    post_id = open_forum_post(nc)
    seed(nc, "is there a dark mode?", channel=post_id, message_id=post_id)
    llm_server.script(answer("Yes."))
    nc.say(f"{nc.mention()} anyone?", channel=post_id)
    await nc.settled((post_id,))
    assert shown(llm_server) == ["alice: is there a dark mode?", "alice: @Tomori anyone?"]


# -- embeds -----------------------------------------------------------------------------------


async def test_other_bots_embeds_and_link_previews_are_shown_and_the_cogs_notices_are_not(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    llm_server.script(http_error(500), answer("It is green."))
    nc.say(f"{nc.mention()} hello?")
    await nc.settled()
    assert nc.discord.embeds() == ["Generation Error"]
    seed(
        nc,
        "",
        author=OTHER_BOT,
        name="ci-bot",
        bot=True,
        embeds=[{"type": "rich", "title": "Build #41 passed", "description": "main, 3m12s"}],
    )
    seed(
        nc,
        "see https://example.com/status",
        embeds=[{"type": "link", "title": "Status page", "url": "https://example.com/status"}],
    )
    nc.say(f"{nc.mention()} is the build green?")
    await nc.settled()
    assert shown(llm_server, 1) == [
        "ci-bot: [embed] Build #41 passed\nmain, 3m12s",
        "alice: see https://example.com/status\n[embed] Status page",
        "alice: @Tomori is the build green?",
    ]


# -- a queued message -------------------------------------------------------------------------


async def test_a_queued_message_is_shown_the_answer_posted_while_it_waited(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    slow = answer("First answer.")
    llm_server.script(Reply(body=slow.body, header_delay=0.5), answer("Second answer."))
    nc.say(f"{nc.mention()} first")
    async with asyncio.timeout(5):
        while not llm_server.requests:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    nc.say(f"{nc.mention()} second", author=BOB, name="bob")  # queued behind the first
    await nc.settled()
    assert nc.discord.contents() == ["First answer.", "Second answer."]
    assert shown(llm_server, 1) == ["alice: @Tomori first", "First answer.", "bob: @Tomori second"]
