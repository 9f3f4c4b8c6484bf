"""tomori-cog in a real bot of each Discord library, end to end against the local LLM server."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import DiscordRestServer
from tests.support.llm_server import LLMServer, Reply, hold_until
from tests.support.nextcord_fake import user_payload
from tests.support.personas import reading_over_rest as started
from tests.support.rest_bots import OpenRestBot, arrive, posted, user_message
from tests.support.scripts import answer, stalled_after
from tests.support.waiting import until
from tests.support.world import CHANNEL_ID, Person
from tomori.config.settings import Delivery, KillPolicy
from tomori.delivery.notices import (
    CLEARED_BY_KILL,
    KILL_NOT_ALLOWED,
    KILL_NOTHING_TO_STOP,
    KILL_STOPPED,
    KILL_STOPPED_OWN,
    cleared_by_kill,
)
from tomori.store.connect import open_database
from tomori_cog.listener.deliverability import REFUSED_FOR_S

MANAGE_MESSAGES = 1 << 13
MEMBERS = 3_000_000_000_000_000_400
"""The first of the members who join a busy channel's queue, beyond Alice and Bob."""


@pytest.fixture
async def bot(tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot) -> ChatBot:
    return await open_bot(settings_for(tmp_path), chain_for(llm_server))


async def test_a_mention_gets_the_models_answer_streamed_into_the_channel(
    bot: ChatBot, llm_server: LLMServer
) -> None:
    llm_server.script(answer("Hello there!\n\nHow can I help?"))
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    # (one message or two, as the paragraphs came before or after the first send)
    assert "\n\n".join(await bot.contents()) == "Hello there!\n\nHow can I help?"
    assert set(bot.typing) == {CHANNEL_ID}  # the channel shows the bot at work, only that one
    for sent in bot.sent:  # no mass ping, and no one but Alice, who asked (tests/cog/test_pings)
        assert sent.allowed_mentions.get("parse") == []
        assert [int(user) for user in sent.allowed_mentions["users"]] == [Person.ALICE.id]
    messages = llm_server.requests[0].body["messages"]
    assert messages[0]["role"] == "system"
    assert messages[-1] == {"role": "user", "content": "alice: @Tomori hi"}


async def test_messages_that_do_not_ask_for_a_reply_are_left_alone(
    bot: ChatBot, llm_server: LLMServer
) -> None:
    await bot.say("just chatting")
    await bot.say(f"!{bot.mention()} a command for another bot")
    await bot.settled()
    assert llm_server.requests == []
    assert await bot.messages() == []


async def test_a_reply_to_the_bot_is_answered_and_other_bots_are_not(
    bot: ChatBot, llm_server: LLMServer
) -> None:
    llm_server.script(answer("First."), answer("Replying to your reply."))
    await bot.say(f"{bot.mention()} start")
    await bot.settled()
    await bot.say("and another thing", replying_to=bot.find("First."))
    await bot.say(f"{bot.mention()} beep", by=Person.OTHER_BOT)
    await bot.settled()
    assert await bot.contents() == ["First.", "Replying to your reply."]
    assert len(llm_server.requests) == 2


async def test_a_long_answer_arrives_split_into_messages_that_fit(
    bot: ChatBot, llm_server: LLMServer
) -> None:
    paragraph = " ".join(["streaming"] * 120)  # 1,199 characters
    text = f"{paragraph}\n\n{paragraph}\n\n```python\n" + "x = 1\n" * 400 + "```"
    llm_server.script(answer(text, pieces=60))
    await bot.say(f"{bot.mention()} write a lot")
    await bot.settled()
    contents = await bot.contents()
    assert len(contents) >= 4
    assert all(len(content) <= 1950 for content in contents)
    assert contents[0] == paragraph
    assert contents[1] == paragraph
    for part in contents[2:]:
        assert part.startswith("```python\n")
        assert part.endswith("```")
    assert sum(part.count("x = 1") for part in contents[2:]) == 400


async def test_two_quick_messages_are_answered_in_order_the_second_as_a_reply(
    bot: ChatBot, llm_server: LLMServer
) -> None:
    llm_server.script(answer("First answer.", gap=0.05), answer("Second answer."))
    await bot.say(f"{bot.mention()} first question")
    second = await bot.say(f"{bot.mention()} second question")
    await bot.settled()
    assert await bot.contents() == ["First answer.", "Second answer."]
    assert [sent.reply_to for sent in bot.sent] == [None, second.id]
    # the second question was not in the first answer's context: it had its own turn
    first_context = str(llm_server.requests[0].body["messages"])
    assert "second question" not in first_context


async def test_edit_mode_grows_one_message(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    settings = settings_for(tmp_path, delivery=Delivery.EDIT, stream_edit_interval_ms=20)
    bot = await open_bot(settings, chain_for(llm_server))
    text = "Growing " * 40
    llm_server.script(answer(text, pieces=20, gap=0.01))
    await bot.say(f"{bot.mention()} grow")
    await bot.settled()
    assert await bot.contents() == [text.strip()]
    assert len(bot.sent) == 1
    assert bot.edits > 0


async def test_a_forbidden_channel_ends_the_turn_quietly_and_stays_usable(
    bot: ChatBot, llm_server: LLMServer
) -> None:
    bot.forbid_sends(50013, "Missing Permissions")
    llm_server.script(answer("You will not see this."))
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    assert await bot.contents() == []
    bot.allow_sends()
    deliverability = bot.chat._parts.gate.deliverability  # the refusal is remembered a while
    later = deliverability.clock() + REFUSED_FOR_S
    deliverability.clock = lambda: later
    llm_server.script(answer("Now I can talk."))
    await bot.say(f"{bot.mention()} again")
    await bot.settled()
    assert await bot.contents() == ["Now I can talk."]


async def test_a_stalled_model_posts_one_timeout_notice_and_frees_the_channel(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    settings = settings_for(
        tmp_path, stream_first_token_timeout_ms=300, stream_sdk_call_timeout_ms=300
    )
    bot = await open_bot(settings, chain_for(llm_server))
    llm_server.script(stalled_after("I was saying\n\n"), answer("Back again."))
    await bot.say(f"{bot.mention()} hello?")
    await bot.settled()
    assert await bot.contents() == ["I was saying"]
    assert await bot.embeds() == ["Response Timed Out"]
    await bot.say(f"{bot.mention()} still there?")
    await bot.settled()
    assert (await bot.contents())[-1] == "Back again."


async def test_kill_stops_the_stream_keeps_its_text_and_closes_the_provider_connection(
    bot: ChatBot, llm_server: LLMServer
) -> None:
    llm_server.script(stalled_after("Thinking hard.\n\n"), answer("Next!"))
    await bot.say(f"{bot.mention()} think")
    await llm_server.request_arrived.wait()
    await bot.sent_event.wait()
    killed_at = time.monotonic()
    reply = await bot.kill()
    assert reply["data"]["embeds"][0]["title"] == KILL_STOPPED.title
    assert reply["data"]["flags"] & 64
    connection = llm_server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), 1)
    assert connection.closed_at is not None
    assert connection.closed_at - killed_at < 0.5
    await bot.settled()
    assert [m.content for m in await bot.messages()] == ["Thinking hard."]
    await bot.say(f"{bot.mention()} next")
    await bot.settled()
    assert await bot.contents() == ["Thinking hard.", "Next!"]


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_a_message_sent_just_after_kill_is_answered_and_nothing_waiting_is_posted(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, delivery: Delivery
) -> None:
    """The answer's second message waits for the channel's next slot (a second after the
    first) when a moderator's /kill comes: it is dropped at once, not sent once the slot
    comes, and the channel takes the message sent right after the kill (it was ignored while
    the stopped answer waited for its slot)."""
    settings = settings_for(tmp_path, delivery=delivery, stream_sdk_call_timeout_ms=60_000)
    bot = await open_bot(settings, chain_for(llm_server))
    first, second = "One " * 300, "Two " * 300  # one message each: together past 2,000
    llm_server.script(stalled_after(f"{first}\n\n{second}\n\n"), answer("Next!"))
    await bot.say(f"{bot.mention()} think", by=Person.BOB)
    await bot.sent_event.wait()  # the first is shown; the second waits for the channel
    await bot.kill(by=Person.BOB, permissions=MANAGE_MESSAGES)
    await bot.say(f"{bot.mention()} next")  # at once
    await bot.settled()
    assert await bot.contents() == [first.strip(), "Next!"]
    asked = llm_server.requests[-1].body["messages"][-1]["content"]
    assert "alice: @Tomori next" in asked.splitlines()


async def test_kill_with_nothing_running_says_so(bot: ChatBot) -> None:
    reply = await bot.kill()
    assert reply["data"]["embeds"][0]["title"] == KILL_NOTHING_TO_STOP.title


async def test_a_members_kill_stops_their_own_answer_and_clears_only_their_queue(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    """By default /kill is the member's own: it stops the answer to them and clears what they
    queued; another member's queued question is still answered, and their /kill cannot stop
    Alice's answer (only clear their own)."""
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server))
    llm_server.script(stalled_after("Busy.\n\n"), answer("For Bob."))
    await bot.say(f"{bot.mention()} slow", by=Person.ALICE)
    await bot.sent_event.wait()
    refused = await bot.kill(by=Person.BOB)
    assert refused["data"]["embeds"][0]["title"] == KILL_NOT_ALLOWED.title  # nothing of his
    await bot.say(f"{bot.mention()} my turn next", by=Person.BOB)  # queued behind Alice's
    await bot.admitted()
    stopped = await bot.kill(by=Person.ALICE)
    assert stopped["data"]["embeds"][0]["description"] == KILL_STOPPED_OWN.description
    await bot.settled()
    assert await bot.contents() == ["Busy.", "For Bob."]  # Bob's question was kept
    assert await bot.embeds() == []  # and Alice, who cleared only her own, is told nothing


async def test_a_member_whose_queued_messages_a_moderators_kill_cleared_is_told_once(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    """A moderator's /kill clears the channel's queue: Alice, whose two questions waited behind
    Bob's answer, is told once, in a reply to her newest that pings no one; the moderator's
    own queued question is not told (he knows), and a second /kill tells no one again."""
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server))
    llm_server.script(stalled_after("Busy.\n\n"))
    await bot.say(f"{bot.mention()} slow", by=Person.BOB)
    await bot.sent_event.wait()
    await bot.say(f"{bot.mention()} first", by=Person.ALICE)
    newest = await bot.say(f"{bot.mention()} second", by=Person.ALICE)
    await bot.say(f"{bot.mention()} and mine", by=Person.BOB)
    await bot.admitted()  # the three wait behind Bob's answer
    for _ in range(2):
        killed = await bot.kill(by=Person.BOB, permissions=MANAGE_MESSAGES)
        assert killed["data"]["flags"] & 64
        await bot.settled()
        notices = [m for m in await bot.messages() if m.embeds]
        assert [(m.embeds[0]["description"], m.reply_to) for m in notices] == [
            (CLEARED_BY_KILL.description, newest.id)
        ]
    assert await bot.contents() == ["Busy."]
    for sent in bot.sent:  # no one pinged: not Alice replied to, not anyone named
        assert sent.allowed_mentions.get("parse") == []
        assert not sent.allowed_mentions.get("replied_user")
    assert bot.sent[-1].reply_to == newest.id  # the notice
    assert not bot.sent[-1].allowed_mentions.get("users")


async def test_a_kill_that_clears_many_members_names_them_in_one_notice_that_pings_no_one(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """Past three members, one notice names them all, however many each had waiting: the
    channel shows one message for the kill, and Discord notifies no one of it."""
    bot = await started(open_rest_bot, llm_server, tmp_path)
    llm_server.script(stalled_after("Busy.\n\n"))
    bot.say(f"{bot.mention()} slow", by=Person.BOB)
    await llm_server.request_arrived.wait()
    members = [MEMBERS + n for n in range(4)]
    for member in members + members[:1]:  # the first asks twice
        message = user_message(f"{bot.mention()} me too")
        message["author"] = user_payload(member, f"member{member - MEMBERS}")
        discord_rest.add_message(message)
        arrive(bot.bot, message)
    await bot.admitted()
    await bot.kill(by=Person.BOB, permissions=MANAGE_MESSAGES)
    await bot.settled(CHANNEL_ID)
    (notice,) = [m for m in posted(discord_rest) if m.payload["embeds"]]
    named = ", ".join(f"<@{member}>" for member in members)
    assert (
        notice.payload["embeds"][0]["description"]
        == cleared_by_kill([str(member) for member in members]).description
    )
    assert named in notice.payload["embeds"][0]["description"]
    assert "message_reference" not in notice.payload
    assert notice.pinged == set()


async def test_kill_by_another_member_is_refused_under_the_requester_policy(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    settings = settings_for(tmp_path, kill_policy=KillPolicy.REQUESTER)
    bot = await open_bot(settings, chain_for(llm_server))
    llm_server.script(stalled_after("Busy.\n\n"), stalled_after("Busy again.\n\n"))
    await bot.say(f"{bot.mention()} slow", by=Person.ALICE)
    await bot.sent_event.wait()
    refused = await bot.kill(by=Person.BOB)
    assert refused["data"]["embeds"][0]["title"] == KILL_NOT_ALLOWED.title
    moderator = await bot.kill(by=Person.BOB, permissions=MANAGE_MESSAGES)
    assert moderator["data"]["embeds"][0]["title"] == KILL_STOPPED.title
    await bot.settled()
    bot.sent_event.clear()
    await bot.say(f"{bot.mention()} slow again", by=Person.ALICE)
    await bot.sent_event.wait()
    allowed = await bot.kill(by=Person.ALICE)  # the requester may always stop their own
    assert allowed["data"]["embeds"][0]["title"] == KILL_STOPPED.title
    await bot.settled()


async def test_messages_cleared_by_kill_are_not_kept_past_the_queue_age(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    settings = settings_for(tmp_path, queue_max_age_ms=200)
    bot = await open_bot(settings, chain_for(llm_server))
    llm_server.script(stalled_after("Busy.\n\n"), answer("Later."))
    await bot.say(f"{bot.mention()} slow")
    await bot.sent_event.wait()
    for n in range(3):
        await bot.say(f"{bot.mention()} queued {n}")
    await bot.admitted()  # the three are admitted, queued behind the stalled turn
    await bot.kill()  # clears them: their turns will never read their messages
    await bot.settled()
    await asyncio.sleep(0.3)  # past TOMORI_QUEUE_MAX_AGE_MS
    await bot.say(f"{bot.mention()} later")
    await bot.settled()
    assert await bot.contents() == ["Busy.", "Later."]
    assert len(bot.chat._parts.live_messages) == 0  # none of the four messages is held any more


async def test_everyone_and_role_mentions_from_the_model_ping_no_one(
    bot: ChatBot, llm_server: LLMServer
) -> None:
    llm_server.script(answer("@everyone @here <@&123456> look!"))
    await bot.say(f"{bot.mention()} announce")
    await bot.settled()
    # No @everyone/@here, no roles, not the replied-to author; only the people involved.
    assert bot.sent[0].allowed_mentions["parse"] == []
    assert not bot.sent[0].allowed_mentions.get("replied_user")
    assert bot.sent[0].content == "@everyone @here <@&123456> look!"


async def test_a_lock_left_in_the_database_is_recovered_and_the_channel_served(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    settings = settings_for(tmp_path)
    await (await open_database(settings)).close()
    bot = await open_bot(settings, chain_for(llm_server))
    # a crashed process's leftover lock
    with closing(sqlite3.connect(settings.db_path)) as db, db:
        db.execute(
            "INSERT INTO channel_locks (channel_id, owner, turn_id, locked_at,"
            " last_progress_at, watchdogs) VALUES (?, 'crashed', 't', 0, 0, 1)",
            (str(CHANNEL_ID),),
        )
    llm_server.script(answer("Served after the crash."))
    await bot.say(f"{bot.mention()} anyone home?")
    await bot.settled()
    assert (await bot.contents())[-1] == "Served after the crash."


async def test_typing_shows_while_nothing_is_shown_and_stops_once_the_text_flows(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    """Refreshed while the model has said nothing; once the answer's text is in the channel
    it shows the bot at work, and a refresh would only spend the channel's requests."""
    bot = await open_bot(
        settings_for(tmp_path, typing_keepalive_interval_ms=50), chain_for(llm_server)
    )
    paragraphs = [f"Paragraph {n} of a slow answer." for n in range(10)]
    reply = answer("\n\n".join(paragraphs), pieces=10, gap=0.1)  # about a second of text
    thought = asyncio.Event()
    llm_server.script(Reply(body=[hold_until(thought), *reply.body]))  # the model thinks first
    await bot.say(f"{bot.mention()} hi")
    await until(lambda: len(bot.typing) >= 3)  # refreshed while the channel shows nothing
    thought.set()
    await asyncio.wait_for(bot.sent_event.wait(), 5)
    while_waiting = len(bot.typing)
    await bot.settled()
    assert " ".join(await bot.contents()).split() == " ".join(paragraphs).split()
    assert while_waiting >= 3  # refreshed while the channel showed nothing
    assert set(bot.typing) == {CHANNEL_ID}
    assert len(bot.typing) <= while_waiting + 1  # (one may have been on the wire meanwhile)
