"""What the model is shown of the conversation, through the cog in a discord.py bot (dpytest):
reply chains older than the history, a thread's starter message, other bots' embeds; never the
cog's own notices. discord.py builds its own Thread, ForumChannel and referenced messages, so
the same behaviour is proved on its objects too."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import discord
import discord.ext.test as dpytest
import discord.ext.test.backend as back
import discord.ext.test.factories as facts
import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.conversation import forum_payload, quoted, shown, thread_payload
from tests.support.dpy import DpyBot, start_dpy_bot, stop_dpy_bot
from tests.support.llm_server import LLMServer, Reply
from tests.support.scripts import answer, http_error


@pytest.fixture
async def dpy(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[DpyBot]:
    harness = await start_dpy_bot(
        settings_for(tmp_path, history_limit=3), chain_for(llm_server), monkeypatch
    )
    yield harness
    await stop_dpy_bot(harness)


async def post(
    content: str,
    channel: Any,
    author: discord.abc.User,
    *,
    replying_to: dict[str, Any] | None = None,
    embeds: list[discord.Embed] | None = None,
    message_id: int = -1,
) -> dict[str, Any]:
    """A message arrives as the gateway would bring it; returns its payload, as Discord keeps it.

    dpytest's own `message` helper knows no replies: this one builds the payload with dpytest's
    factory and adds the reference as Discord sends it (the message replied to, without the
    message that one replies to).
    """
    guild = channel.guild
    mentions: list[discord.User | discord.Member] = [*back.find_user_mentions(content, guild)]
    data: dict[str, Any] = facts.make_message_dict(  # type: ignore[call-overload]
        channel,
        author,
        message_id,
        content=content,
        mentions=mentions,
        embeds=embeds or [],
        guild_id=guild.id,
    )
    if replying_to is not None:
        data["type"] = 19
        data["message_reference"] = {"message_id": replying_to["id"], "channel_id": channel.id}
        data["referenced_message"] = quoted(replying_to)
    stored_messages().setdefault(channel.id, []).append(data)
    back.get_state().parse_message_create(data)  # type: ignore[arg-type]
    await dpytest.run_all_events()
    return data


def stored_messages() -> dict[int, list[dict[str, Any]]]:
    """dpytest's store of message payloads by channel, which its REST fake answers from."""
    config = back._cur_config
    assert config is not None
    return config.messages


async def test_a_reply_to_a_message_older_than_the_history_brings_it_and_its_chain_in_order(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    bob = await dpytest.member_join(name="bob")
    question = await post("which port does staging use?", dpy.channel, dpy.member)
    reply = await post("5433, since the move", dpy.channel, bob, replying_to=question)
    for n in range(5):
        await post(f"chatter {n}", dpy.channel, dpy.member)
    llm_server.script(answer("Still 5433."))
    await post(f"{dpy.mention()} still right?", dpy.channel, dpy.member, replying_to=reply)
    await dpy.settled()
    me = dpy.member.display_name
    assert shown(llm_server) == [
        f"{me}: which port does staging use?",
        "bob: 5433, since the move",
        f"{me}: chatter 2",
        f"{me}: chatter 3",
        f"{me}: chatter 4",
        f"{me}: @{dpy.channel.guild.me.display_name} still right?",
    ]
    assert [m.content for m in await dpy.bot_messages()] == ["Still 5433."]


def open_thread(thread_id: int, parent: Any, owner: discord.abc.User) -> discord.Thread:
    """THREAD_CREATE, as the gateway announces a thread (or a forum post) the bot can see."""
    back.get_state().parse_thread_create(
        thread_payload(thread_id, parent.guild.id, parent.id, owner.id)  # type: ignore[arg-type]
    )
    thread = parent.guild.get_thread(thread_id)
    assert isinstance(thread, discord.Thread)
    stored_messages().setdefault(thread_id, [])
    return thread


async def test_in_a_thread_the_history_is_the_threads_and_its_starter_is_shown(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    starter = await post("release checklist for 2.0", dpy.channel, dpy.member)
    thread = open_thread(starter["id"], dpy.channel, dpy.member)
    await post("meanwhile in the channel", dpy.channel, dpy.member)
    for n in range(5):
        await post(f"step {n} done", thread, dpy.member)
    llm_server.script(answer("Two steps left."))
    await post(f"{dpy.mention()} what is left?", thread, dpy.member)
    await dpy.service.wait_idle(thread.id)
    me = dpy.member.display_name
    assert shown(llm_server) == [
        f"{me}: release checklist for 2.0",
        f"{me}: step 2 done",
        f"{me}: step 3 done",
        f"{me}: step 4 done",
        f"{me}: @{dpy.channel.guild.me.display_name} what is left?",
    ]


async def test_a_forum_posts_first_message_is_shown_however_long_the_post(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    guild = dpy.channel.guild
    forum_id = facts.make_id()
    back.get_state().parse_channel_create(forum_payload(forum_id, guild.id))
    forum = guild.get_channel(forum_id)
    assert isinstance(forum, discord.ForumChannel)
    post_id = facts.make_id()
    thread = open_thread(post_id, forum, dpy.member)
    await post("my build fails on arm64", thread, dpy.member, message_id=post_id)
    for n in range(5):
        await post(f"tried fix {n}", thread, dpy.member)
    llm_server.script(answer("Pin the toolchain."))
    await post(f"{dpy.mention()} any idea?", thread, dpy.member)
    await dpy.service.wait_idle(thread.id)
    me = dpy.member.display_name
    assert shown(llm_server) == [
        f"{me}: my build fails on arm64",
        f"{me}: tried fix 2",
        f"{me}: tried fix 3",
        f"{me}: tried fix 4",
        f"{me}: @{dpy.channel.guild.me.display_name} any idea?",
    ]


async def test_other_bots_embeds_and_link_previews_are_shown_and_the_cogs_notices_are_not(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    llm_server.script(http_error(500), answer("It is green."))
    await dpy.say(f"{dpy.mention()} hello?")
    await dpy.settled()
    assert [m.embeds[0].title for m in await dpy.bot_messages()] == ["Generation Error"]
    ci_bot = facts.make_user_dict("ci-bot", 1, None, bot=True)
    ci = back.get_state().store_user(ci_bot)  # type: ignore[arg-type]
    build = discord.Embed(title="Build #41 passed", description="main, 3m12s")
    await post("", dpy.channel, ci, embeds=[build])
    preview = discord.Embed(title="Status page", url="https://example.com/status")
    await post("see https://example.com/status", dpy.channel, dpy.member, embeds=[preview])
    await dpy.say(f"{dpy.mention()} is the build green?")
    await dpy.settled()
    me = dpy.member.display_name
    assert shown(llm_server, 1) == [
        "ci-bot: [embed] Build #41 passed\nmain, 3m12s",
        f"{me}: see https://example.com/status\n[embed] Status page",
        f"{me}: @{dpy.channel.guild.me.display_name} is the build green?",
    ]


async def test_a_queued_message_is_shown_the_answer_posted_while_it_waited(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    slow = answer("First answer.")
    llm_server.script(Reply(body=slow.body, header_delay=0.5), answer("Second answer."))
    await dpy.say(f"{dpy.mention()} first")
    async with asyncio.timeout(5):
        while not llm_server.requests:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    await dpy.say(f"{dpy.mention()} second")  # queued behind the first
    await dpy.settled()
    assert [m.content for m in await dpy.bot_messages()] == ["First answer.", "Second answer."]
    answered, asked = shown(llm_server, 1)[-2:]
    assert answered == "First answer."
    assert asked.startswith(f"{dpy.member.display_name}: @")
    assert asked.endswith(" second")
