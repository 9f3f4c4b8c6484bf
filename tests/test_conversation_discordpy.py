"""What the model is shown of the conversation, through the cog in a discord.py bot (dpytest):
reply chains older than the history. discord.py builds its own referenced messages, so the
same behaviour is proved on its objects too."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import discord
import discord.ext.test as dpytest
import discord.ext.test.backend as back
import discord.ext.test.factories as facts
import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.dpy import DpyBot, start_dpy_bot, stop_dpy_bot
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer


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
        quoted = copy.copy(replying_to)
        quoted.pop("referenced_message", None)
        data["type"] = 19
        data["message_reference"] = {"message_id": quoted["id"], "channel_id": channel.id}
        data["referenced_message"] = quoted
    stored_messages().setdefault(channel.id, []).append(data)
    back.get_state().parse_message_create(data)  # type: ignore[arg-type]
    await dpytest.run_all_events()
    return data


def stored_messages() -> dict[int, list[dict[str, Any]]]:
    """dpytest's store of message payloads by channel, which its REST fake answers from."""
    config = back._cur_config
    assert config is not None
    return config.messages


def shown(server: LLMServer, request: int = 0) -> list[str]:
    """What the model was sent, after the system prompt: each message's text, in order."""
    messages = server.requests[request].body["messages"]
    assert messages[0]["role"] == "system"
    return [message["content"] for message in messages[1:]]


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
