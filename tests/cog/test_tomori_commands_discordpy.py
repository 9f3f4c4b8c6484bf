"""/tomori in a discord.py bot (dpytest): the same commands change the next turn the same way.

On SQLite and PostgreSQL (the `database` fixture). Commands go through the real command tree.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import discord
import pytest

from tests.support.cog_settings import SHORT_BUDGETS, chain_for
from tests.support.databases import DatabaseUnderTest
from tests.support.dpy import DpyBot, start_dpy_bot, stop_dpy_bot
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer, silent
from tests.support.tomori_commands import dpy_tomori, said
from tomori.config.settings import DEFAULT_SYSTEM_PROMPT

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
async def dpy(
    database: DatabaseUnderTest, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[DpyBot]:
    quick = {"stream_first_token_timeout_ms": 300, "stream_sdk_call_timeout_ms": 300}
    settings = database.settings(**{**SHORT_BUDGETS, **quick})
    harness = await start_dpy_bot(settings, chain_for(llm_server), monkeypatch)
    yield harness
    await stop_dpy_bot(harness)


async def ask(dpy: DpyBot, llm_server: LLMServer) -> dict[str, Any]:
    seen = len(llm_server.requests)
    llm_server.script(answer("Sure."))
    await dpy.say(f"{dpy.mention()} hello")
    await dpy.settled()
    assert len(llm_server.requests) == seen + 1
    body: dict[str, Any] = llm_server.requests[-1].body
    return body


def model_and_prompt(body: dict[str, Any]) -> tuple[str, str]:
    return body["model"], body["messages"][0]["content"]


async def test_the_channels_model_and_prompt_beat_the_servers_and_the_environments(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    assert model_and_prompt(await ask(dpy, llm_server)) == ("test-model", DEFAULT_SYSTEM_PROMPT)
    said(await dpy_tomori(dpy, "model", models="openai:server-model", scope="server"))
    said(await dpy_tomori(dpy, "prompt", text="Server prompt.", scope="server"))
    assert model_and_prompt(await ask(dpy, llm_server)) == ("server-model", "Server prompt.")
    said(await dpy_tomori(dpy, "prompt", text="Channel prompt."))
    assert model_and_prompt(await ask(dpy, llm_server)) == ("server-model", "Channel prompt.")
    _, shown = said(await dpy_tomori(dpy, "show"))
    assert "Models: openai:server-model (this server)" in shown
    assert "System prompt (this channel):\n> Channel prompt." in shown
    said(await dpy_tomori(dpy, "reset"))
    said(await dpy_tomori(dpy, "reset", scope="server"))
    assert model_and_prompt(await ask(dpy, llm_server)) == ("test-model", DEFAULT_SYSTEM_PROMPT)


async def test_a_bad_chain_is_refused_with_the_reason_and_nothing_is_stored(
    dpy: DpyBot, llm_server: LLMServer, database: DatabaseUnderTest
) -> None:
    title, text = said(await dpy_tomori(dpy, "model", models="openai"))
    assert title == "Not Changed"
    assert "'openai' is not provider:model" in text
    title, _ = said(await dpy_tomori(dpy, "limits", cooldown_ms=10**9))
    assert title == "Not Changed"
    assert await database.rows("SELECT * FROM channel_settings") == []
    assert await database.rows("SELECT * FROM server_settings") == []
    assert (await ask(dpy, llm_server))["model"] == "test-model"


async def test_autoreply_answers_every_message_in_the_channel(
    dpy: DpyBot, llm_server: LLMServer
) -> None:
    await dpy.say("just chatting")
    await dpy.settled()
    assert llm_server.requests == []
    said(await dpy_tomori(dpy, "autoreply", enabled=True))
    llm_server.script(answer("Hello, chatter."))
    await dpy.say("still chatting")
    await dpy.settled()
    assert [m.content for m in await dpy.bot_messages()] == ["Hello, chatter."]


async def test_status_counts_turns_stalls_and_fallbacks(dpy: DpyBot, llm_server: LLMServer) -> None:
    said(await dpy_tomori(dpy, "model", models="openai:first,openai:second"))
    llm_server.script(answer("One."))
    await dpy.say(f"{dpy.mention()} one")
    await dpy.settled()
    llm_server.script(silent(), answer("Two!"))
    await dpy.say(f"{dpy.mention()} two")
    await dpy.settled()
    _, text = said(await dpy_tomori(dpy, "status"))
    assert text.splitlines()[:3] == [
        "Turns per model: openai:first 2, openai:second 1",
        "Stalls: first token 1, idle 0",
        "Fallbacks used: 1",
    ]


async def test_the_group_is_for_servers_and_members_who_can_manage_them(dpy: DpyBot) -> None:
    command = dpy.bot.tree.get_command("tomori")
    assert command is not None
    takes_tree = bool(inspect.signature(command.to_dict).parameters)  # not before 2.4
    payload = command.to_dict(dpy.bot.tree) if takes_tree else command.to_dict()  # type: ignore[call-arg]
    assert (
        int(payload["default_member_permissions"]) == discord.Permissions(manage_guild=True).value
    )
    assert payload["dm_permission"] is False
    names = {option["name"] for option in payload["options"]}
    assert names == {"model", "prompt", "autoreply", "show", "reset", "status", "limits"}
