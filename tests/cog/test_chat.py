"""tomori-cog in a real nextcord bot, end to end against the local LLM server."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import nextcord
import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import (
    ALICE,
    BOB,
    CHANNEL_ID,
    NextcordBot,
    OpenNextcord,
    discord_error,
)
from tests.support.scripts import answer, stalled_after
from tomori.config.settings import Delivery, KillPolicy
from tomori.delivery.notices import KILL_NOT_ALLOWED, KILL_STOPPED
from tomori_cog.listener.deliverability import REFUSED_FOR_S

OTHER_BOT = 5_000_000_000_000_000_005  # a bot that is not one of the guild's members


@pytest.fixture
async def nc(tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord) -> NextcordBot:
    return await open_nextcord(settings_for(tmp_path), chain_for(llm_server))


async def test_a_mention_gets_the_models_answer_streamed_into_the_channel(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    llm_server.script(answer("Hello from nextcord!\n\nSecond paragraph."))
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["Hello from nextcord!", "Second paragraph."]
    assert nc.discord.typing >= 1
    assert all(
        body["allowed_mentions"] == {"parse": ["users"], "replied_user": False}
        or body["allowed_mentions"].get("parse") == ["users"]
        for body in nc.discord.sent
    )


async def test_a_reply_to_the_bot_is_answered_and_other_bots_are_not(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    llm_server.script(answer("First."), answer("Replying to your reply."))
    nc.say(f"{nc.mention()} start")
    await nc.settled()
    own = next(m for m in nc.discord.messages[CHANNEL_ID] if m["content"] == "First.")
    nc.say("and another thing", replying_to=own)
    nc.say(f"{nc.mention()} beep", author=OTHER_BOT, name="otherbot", bot=True)
    await nc.settled()
    assert nc.discord.contents() == ["First.", "Replying to your reply."]
    assert len(llm_server.requests) == 2


async def test_two_quick_messages_are_answered_in_order_the_second_as_a_reply(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    llm_server.script(answer("One.", gap=0.05), answer("Two."))
    nc.say(f"{nc.mention()} one")
    second = nc.say(f"{nc.mention()} two")
    await nc.settled()
    assert nc.discord.contents() == ["One.", "Two."]
    assert "message_reference" not in nc.discord.sent[0]
    assert nc.discord.sent[1]["message_reference"]["message_id"] == int(second["id"])


async def test_edit_mode_grows_one_message(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    settings = settings_for(tmp_path, delivery=Delivery.EDIT, stream_edit_interval_ms=20)
    nc = await open_nextcord(settings, chain_for(llm_server))
    text = "Growing " * 40
    llm_server.script(answer(text, pieces=20, gap=0.01))
    nc.say(f"{nc.mention()} grow")
    await nc.settled()
    assert nc.discord.contents() == [text.strip()]
    assert len(nc.discord.sent) == 1
    assert nc.discord.edits


async def test_a_forbidden_channel_ends_the_turn_quietly_and_stays_usable(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    nc.discord.fail_sends = lambda body: discord_error(
        nextcord.Forbidden, 403, 50013, "Missing Permissions"
    )
    llm_server.script(answer("You will not see this."))
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    assert nc.discord.contents() == []
    nc.discord.fail_sends = lambda body: None
    deliverability = nc.service._gate.deliverability  # the refusal is remembered a while
    later = deliverability.clock() + REFUSED_FOR_S
    deliverability.clock = lambda: later
    llm_server.script(answer("Now I can talk."))
    nc.say(f"{nc.mention()} again")
    await nc.settled()
    assert nc.discord.contents() == ["Now I can talk."]


async def test_a_stalled_model_posts_one_timeout_notice(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    settings = settings_for(
        tmp_path, stream_first_token_timeout_ms=300, stream_sdk_call_timeout_ms=300
    )
    nc = await open_nextcord(settings, chain_for(llm_server))
    llm_server.script(stalled_after("Hmm\n\n"))
    nc.say(f"{nc.mention()} hello?")
    await nc.settled()
    assert nc.discord.contents() == ["Hmm"]
    assert nc.discord.embeds() == ["Response Timed Out"]


async def test_kill_stops_the_stream_and_closes_the_provider_connection(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    llm_server.script(stalled_after("Thinking hard.\n\n"), answer("Next!"))
    nc.say(f"{nc.mention()} think")
    await nc.discord.sent_event.wait()
    killed_at = time.monotonic()
    reply = await nc.kill()
    assert reply["data"]["embeds"][0]["title"] == KILL_STOPPED.title
    assert reply["data"]["flags"] & 64
    connection = llm_server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), 1)
    assert connection.closed_at is not None
    assert connection.closed_at - killed_at < 0.5
    await nc.settled()
    nc.say(f"{nc.mention()} next")
    await nc.settled()
    assert nc.discord.contents() == ["Thinking hard.", "Next!"]


async def test_kill_by_another_member_is_refused_under_the_requester_policy(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    settings = settings_for(tmp_path, kill_policy=KillPolicy.REQUESTER)
    nc = await open_nextcord(settings, chain_for(llm_server))
    llm_server.script(stalled_after("Busy.\n\n"))
    nc.say(f"{nc.mention()} slow", author=ALICE)
    await nc.discord.sent_event.wait()
    refused = await nc.kill(user=BOB, name="bob")
    assert refused["data"]["embeds"][0]["title"] == KILL_NOT_ALLOWED.title
    allowed = await nc.kill(user=ALICE)
    assert allowed["data"]["embeds"][0]["title"] == KILL_STOPPED.title
    await nc.settled()


async def test_messages_cleared_by_kill_are_not_kept_past_the_queue_age(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    settings = settings_for(tmp_path, queue_max_age_ms=200)
    nc = await open_nextcord(settings, chain_for(llm_server))
    llm_server.script(stalled_after("Busy.\n\n"), answer("Later."))
    nc.say(f"{nc.mention()} slow")
    await nc.discord.sent_event.wait()
    for n in range(3):
        nc.say(f"{nc.mention()} queued {n}")
    await nc.settled(())  # the three are admitted, queued behind the stalled turn
    await nc.kill()  # clears them: their turns will never read their messages
    await nc.settled()
    await asyncio.sleep(0.3)  # past TOMORI_QUEUE_MAX_AGE_MS
    nc.say(f"{nc.mention()} later")
    await nc.settled()
    assert nc.discord.contents() == ["Busy.", "Later."]
    assert len(nc.service._live_messages) == 0  # none of the four messages is held any more
