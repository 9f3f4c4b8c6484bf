"""/tomori in a nextcord bot: what a server's admins set changes what the next turn does.

Each test runs on SQLite and on PostgreSQL (the `database` fixture): the settings live there.
What the model was sent is what the local LLM server recorded.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import nextcord
import pytest

from tests.support.cog_settings import SHORT_BUDGETS, chain_for
from tests.support.databases import DatabaseUnderTest, postgres_database
from tests.support.gemini_wire import response, text_part
from tests.support.llm_server import LLMServer, Reply, sse
from tests.support.nextcord_fake import (
    CHANNEL_ID,
    GUILD_ID,
    NextcordBot,
    OpenNextcord,
    deny_send,
    stop_nextcord_bot,
)
from tests.support.scripts import answer, silent, stalled_after
from tests.support.tomori_commands import nextcord_tomori, said
from tomori.config.settings import DEFAULT_SYSTEM_PROMPT, Settings
from tomori.delivery.notices import KILL_STOPPED
from tomori.policy.limits import UserLimits
from tomori.policy.overrides import MAX_PROMPT_CHARS

OTHER_CHANNEL = CHANNEL_ID + 1


def settings(database: DatabaseUnderTest, **overrides: Any) -> Settings:
    return database.settings(**{**SHORT_BUDGETS, **overrides})


@pytest.fixture
async def nc(
    database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> NextcordBot:
    return await open_nextcord(settings(database), chain_for(llm_server))


async def ask(nc: NextcordBot, llm_server: LLMServer, channel: int = CHANNEL_ID) -> dict[str, Any]:
    """A mention in `channel`, answered; return the request the model got."""
    seen = len(llm_server.requests)
    llm_server.script(answer("Sure."))
    nc.say(f"{nc.mention()} hello", channel=channel)
    await nc.settled()
    assert len(llm_server.requests) == seen + 1
    body: dict[str, Any] = llm_server.requests[-1].body
    return body


def system_prompt(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


async def test_a_channels_model_and_prompt_apply_from_its_next_turn(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    before = await ask(nc, llm_server)
    assert (before["model"], system_prompt(before)) == ("test-model", DEFAULT_SYSTEM_PROMPT)
    title, text = said(await nextcord_tomori(nc, "model", models="openai:channel-model"))
    assert (title, text) == ("Tomori Settings", "Models for this channel: openai:channel-model")
    said(await nextcord_tomori(nc, "prompt", text="You are a pirate."))
    after = await ask(nc, llm_server)
    assert (after["model"], system_prompt(after)) == ("channel-model", "You are a pirate.")
    elsewhere = await ask(nc, llm_server, channel=OTHER_CHANNEL)
    assert elsewhere["model"] == "test-model"  # the channel's own: no other channel's


async def test_channel_beats_server_beats_environment(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    said(await nextcord_tomori(nc, "model", models="openai:server-model", scope="server"))
    said(await nextcord_tomori(nc, "prompt", text="Server prompt.", scope="server"))
    said(await nextcord_tomori(nc, "model", models="openai:channel-model"))
    here, there = await ask(nc, llm_server), await ask(nc, llm_server, channel=OTHER_CHANNEL)
    assert (here["model"], system_prompt(here)) == ("channel-model", "Server prompt.")
    assert (there["model"], system_prompt(there)) == ("server-model", "Server prompt.")
    _, shown = said(await nextcord_tomori(nc, "show"))
    assert "Models: openai:channel-model (this channel)" in shown
    assert "System prompt (this server):\n> Server prompt." in shown
    said(await nextcord_tomori(nc, "reset"))
    assert (await ask(nc, llm_server))["model"] == "server-model"
    said(await nextcord_tomori(nc, "reset", scope="server"))
    back = await ask(nc, llm_server)
    assert (back["model"], system_prompt(back)) == ("test-model", DEFAULT_SYSTEM_PROMPT)
    _, shown = said(await nextcord_tomori(nc, "show"))
    assert "Models: openai:test-model (the bot's settings)" in shown


async def test_a_bad_chain_or_a_too_long_prompt_is_refused_and_nothing_is_stored(
    nc: NextcordBot, llm_server: LLMServer, database: DatabaseUnderTest
) -> None:
    title, text = said(await nextcord_tomori(nc, "model", models="openai:ok,nope:model"))
    assert title == "Not Changed"
    assert "'nope:model' names an unknown provider 'nope'" in text
    title, text = said(await nextcord_tomori(nc, "prompt", text="x" * (MAX_PROMPT_CHARS + 1)))
    assert title == "Not Changed"
    assert f"at most {MAX_PROMPT_CHARS}" in text
    title, text = said(await nextcord_tomori(nc, "limits", cooldown_ms=5_000, daily_tokens=10**12))
    assert title == "Not Changed"
    assert "daily_tokens" in text
    title, text = said(await nextcord_tomori(nc, "model", models="openai:m", scope="everywhere"))
    assert (title, "it must be one of channel, server" in text) == ("Not Changed", True)
    assert await database.rows("SELECT * FROM channel_settings") == []
    assert await database.rows("SELECT * FROM server_settings") == []  # no half of the limits
    body = await ask(nc, llm_server)
    assert (body["model"], system_prompt(body)) == ("test-model", DEFAULT_SYSTEM_PROMPT)


async def test_a_provider_the_bot_has_no_key_for_is_refused(
    nc: NextcordBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    title, text = said(await nextcord_tomori(nc, "model", models="gemini:gemini-2.5-flash"))
    assert title == "Not Changed"
    assert "needs GEMINI_API_KEY, which is not set" in text


async def test_a_provider_only_a_channels_chain_names_is_built_and_closed(
    nc: NextcordBot, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-test-key")
    monkeypatch.setenv("GEMINI_BASE_URL", llm_server.base_url)
    said(await nextcord_tomori(nc, "model", models="gemini:channel-gemini"))
    llm_server.script(Reply(body=[sse(response(text_part("From Gemini."), finish="STOP"))]))
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    assert "channel-gemini" in llm_server.requests[-1].path
    assert nc.discord.contents() == ["From Gemini."]
    config = nc.service.config
    assert set(config.providers) == {"openai", "gemini"}
    await stop_nextcord_bot(nc)
    assert config.providers == {}
    for connection in llm_server.connections:
        await asyncio.wait_for(connection.closed.wait(), 2)


async def test_autoreply_answers_every_message_in_the_channel_until_turned_off(
    nc: NextcordBot, llm_server: LLMServer
) -> None:
    nc.say("just chatting")
    await nc.settled()
    assert llm_server.requests == []
    said(await nextcord_tomori(nc, "autoreply", enabled=True))
    llm_server.script(answer("Hello, chatter."))
    nc.say("still chatting")
    nc.say("in another channel", channel=OTHER_CHANNEL)
    await nc.settled()
    assert nc.discord.contents() == ["Hello, chatter."]
    said(await nextcord_tomori(nc, "autoreply", enabled=False))
    nc.say("chatting on")
    await nc.settled()
    assert len(llm_server.requests) == 1


async def test_autoreply_where_the_bot_cannot_post_says_so(nc: NextcordBot) -> None:
    deny_send(nc, nextcord.Permissions(send_messages=True).value)
    title, text = said(await nextcord_tomori(nc, "autoreply", enabled=True))
    assert title == "Tomori Settings"
    assert text.startswith(  # Discord drops what depends on sending too: embed links
        "This channel now answers every message, but the bot cannot post here yet"
        " (no send_messages permission"
    )


async def test_autoreply_off_beats_the_environments_channel_list(
    database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(
        settings(database, channels=frozenset({CHANNEL_ID})), chain_for(llm_server)
    )
    said(await nextcord_tomori(nc, "autoreply", enabled=False))
    nc.say("chatting")
    await nc.settled()
    assert llm_server.requests == []
    _, shown = said(await nextcord_tomori(nc, "show"))
    assert "Answers every message: no (this channel)" in shown


async def test_settings_survive_a_restart(
    database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    first = await open_nextcord(settings(database), chain_for(llm_server))
    said(await nextcord_tomori(first, "model", models="openai:kept-model", scope="server"))
    said(await nextcord_tomori(first, "prompt", text="Kept prompt."))
    said(await nextcord_tomori(first, "autoreply", enabled=True))
    said(await nextcord_tomori(first, "limits", cooldown_ms=1_500, daily_tokens=20_000))
    await stop_nextcord_bot(first)
    second = await open_nextcord(settings(database), chain_for(llm_server))
    llm_server.script(answer("Back."))
    second.say("are you there")  # no mention: the channel answers every message
    await second.settled()
    body = llm_server.requests[-1].body
    assert (body["model"], system_prompt(body)) == ("kept-model", "Kept prompt.")
    resolved = await second.service.config.resolved(GUILD_ID, CHANNEL_ID, cached=False)
    assert (resolved.cooldown_ms.value, resolved.daily_tokens.value) == (1_500, 20_000)
    _, shown = said(await nextcord_tomori(second, "show"))
    assert "Limits: cooldown 1500 ms, daily tokens per user 20000" in shown


async def test_limits_set_one_at_a_time_keep_the_other_and_zero_turns_one_off(
    nc: NextcordBot,
) -> None:
    said(await nextcord_tomori(nc, "limits", cooldown_ms=2_000))
    said(await nextcord_tomori(nc, "limits", daily_tokens=0))
    resolved = await nc.service.config.resolved(GUILD_ID, CHANNEL_ID, cached=False)
    assert (resolved.cooldown_ms.value, resolved.daily_tokens.value) == (2_000, 0)
    assert await nc.service.config.user_limits(GUILD_ID) == UserLimits(2.0, 0)
    said(await nextcord_tomori(nc, "reset", scope="server"))
    environment = UserLimits(0.0, 0)  # the settings these tests run with set neither
    assert await nc.service.config.user_limits(GUILD_ID) == environment  # at once
    assert await nc.service.config.user_limits(None) == environment  # a direct message
    title, text = said(await nextcord_tomori(nc, "limits"))
    assert (title, text) == ("Not Changed", "Give cooldown_ms, daily_tokens or both.")


async def test_status_counts_what_happened_in_the_server(
    database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    quick = {"stream_first_token_timeout_ms": 300, "stream_sdk_call_timeout_ms": 300}
    nc = await open_nextcord(settings(database, **quick), chain_for(llm_server))
    said(await nextcord_tomori(nc, "model", models="openai:first,openai:second"))
    llm_server.script(answer("One."))  # first answers
    nc.say(f"{nc.mention()} one")
    await nc.settled()
    llm_server.script(silent(), answer("Two!"))  # first stalls before a token; second answers
    nc.say(f"{nc.mention()} two")
    await nc.settled()
    llm_server.script(stalled_after("Thinking.\n\n"))  # stopped by /kill
    nc.discord.sent_event.clear()
    nc.say(f"{nc.mention()} three")
    await nc.discord.sent_event.wait()
    await nc.kill()
    await nc.settled()
    await database.execute(  # another server's turn is not this one's
        "INSERT INTO turn_outcomes (guild_id, channel_id, model, outcome, phase, fallback,"
        " recorded_at) VALUES ('1', '1', 'openai:first', 'error', NULL, 0, 1e12)"
    )
    await database.execute(
        "INSERT INTO token_usage (guild_id, channel_id, model, input_tokens, output_tokens,"
        " recorded_at) VALUES ('1', '1', 'openai:first', 500, 500, 1e12)"
    )
    title, text = said(await nextcord_tomori(nc, "status"))
    # The turn /kill stopped reported no usage: its characters are counted instead.
    [(tokens_in, tokens_out)] = await database.rows(
        "SELECT SUM(input_tokens), SUM(output_tokens) FROM token_usage"
        f" WHERE guild_id = '{GUILD_ID}'"
    )
    assert tokens_in > 10 + 10
    assert tokens_out > len("One.") // 4 + len("Two!") // 4
    assert title == "Tomori in this server, last 24 hours"
    assert text.splitlines() == [
        "Turns per model: openai:first 3, openai:second 1",
        "Stalls: first token 1, idle 0",
        "Fallbacks used: 1",
        "Stopped by /kill: 1",
        "Errors: 0; empty answers: 0",
        f"Tokens: {tokens_in} in, {tokens_out} out",
    ]


async def test_the_group_is_for_servers_and_members_who_can_manage_them(nc: NextcordBot) -> None:
    command = next(c for c in nc.bot.get_all_application_commands() if c.name == "tomori")
    payload = command.get_payload(None)
    assert (
        int(payload["default_member_permissions"]) == nextcord.Permissions(manage_guild=True).value
    )
    assert payload["contexts"] == [nextcord.InteractionContextType.guild.value]
    options = {option["name"]: option for option in payload["options"]}
    assert set(options) == {"model", "prompt", "autoreply", "show", "reset", "status", "limits"}


async def test_kill_clears_a_message_still_waiting_for_its_servers_limits(
    pg_url: str, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    """A message asked before /kill is cleared by it, however long its checks waited."""
    database = postgres_database(pg_url)
    nc = await open_nextcord(settings(database), chain_for(llm_server))
    blocker = await asyncpg.connect(pg_url)
    try:
        holding = blocker.transaction()
        await holding.start()  # a migration, say: no server's settings can be read meanwhile
        await blocker.execute("LOCK TABLE server_settings IN ACCESS EXCLUSIVE MODE")
        llm_server.script(answer("Asked before the kill."))
        nc.say(f"{nc.mention()} hello")
        async with asyncio.timeout(5):  # the message waits for its server's limits
            while not await blocker.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        await nc.kill()
        await holding.rollback()
        async with asyncio.timeout(10):
            await nc.settled()
    finally:
        await blocker.close()
    assert llm_server.requests == []
    assert nc.discord.contents() == []


async def test_kill_stops_a_turn_still_reading_its_channels_settings(
    pg_url: str, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    database = postgres_database(pg_url)
    nc = await open_nextcord(settings(database), chain_for(llm_server))
    blocker = await asyncpg.connect(pg_url)
    await nc.service.config.user_limits(GUILD_ID)  # the server's limits, read: admission passes
    try:
        holding = blocker.transaction()
        await holding.start()  # a migration, say: the settings cannot be read meanwhile
        await blocker.execute("LOCK TABLE channel_settings IN ACCESS EXCLUSIVE MODE")
        llm_server.script(answer("Too late."))
        nc.say(f"{nc.mention()} hello")
        async with asyncio.timeout(5):
            while nc.discord.typing == 0:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        reply = await nc.kill()
        assert reply["data"]["embeds"][0]["title"] == KILL_STOPPED.title
        async with asyncio.timeout(3):  # the turn ends now, not when the read would give up
            await nc.settled()
        await holding.rollback()
    finally:
        await blocker.close()
    assert llm_server.requests == []
    assert nc.discord.contents() == []
