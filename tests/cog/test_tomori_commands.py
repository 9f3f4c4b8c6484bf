"""/tomori in a bot of each library: what a server's admins set changes what the next turn does.

Each test runs on SQLite and on PostgreSQL (the `database` fixture): the settings live there.
Commands go through each library's real command tree; what the model was sent is what the
local LLM server recorded.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from tests.support.attachments import images_sent
from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import SHORT_BUDGETS, chain_for
from tests.support.databases import DatabaseUnderTest, postgres_database
from tests.support.files import PIXEL, PIXEL_B64, FileServer
from tests.support.gemini_wire import response, text_part
from tests.support.llm_server import LLMServer, Reply, sse
from tests.support.scripts import answer, silent, stalled_after
from tests.support.tomori_commands import MANAGE_GUILD, said
from tests.support.world import CHANNEL_ID, GUILD_ID
from tomori.config.settings import DEFAULT_SYSTEM_PROMPT, Settings
from tomori.delivery.notices import KILL_STOPPED
from tomori.policy.limits import UserLimits
from tomori.policy.overrides import MAX_PROMPT_CHARS

OTHER_CHANNEL = CHANNEL_ID + 1
SEND_MESSAGES = 1 << 11


def settings(database: DatabaseUnderTest, **overrides: Any) -> Settings:
    return database.settings(**{**SHORT_BUDGETS, **overrides})


@pytest.fixture
async def bot(database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot) -> ChatBot:
    return await open_bot(settings(database), chain_for(llm_server, allowed="*"))


async def ask(bot: ChatBot, llm_server: LLMServer, channel: int = CHANNEL_ID) -> dict[str, Any]:
    """A mention in `channel`, answered; return the request the model got."""
    seen = len(llm_server.requests)
    llm_server.script(answer("Sure."))
    await bot.say(f"{bot.mention()} hello", channel=channel)
    await bot.settled()
    assert len(llm_server.requests) == seen + 1
    body: dict[str, Any] = llm_server.requests[-1].body
    return body


def system_prompt(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def model_and_prompt(body: dict[str, Any]) -> tuple[str, str]:
    return body["model"], system_prompt(body)


async def test_a_channels_model_and_prompt_apply_from_its_next_turn(
    bot: ChatBot, llm_server: LLMServer
) -> None:
    before = await ask(bot, llm_server)
    assert model_and_prompt(before) == ("test-model", DEFAULT_SYSTEM_PROMPT)
    title, text = said(await bot.tomori("model", models="openai:channel-model"))
    assert (title, text) == ("Tomori Settings", "Models for this channel: openai:channel-model")
    said(await bot.tomori("prompt", text="You are a pirate."))
    after = await ask(bot, llm_server)
    assert model_and_prompt(after) == ("channel-model", "You are a pirate.")
    elsewhere = await ask(bot, llm_server, channel=OTHER_CHANNEL)
    assert elsewhere["model"] == "test-model"  # the channel's own: no other channel's


async def test_channel_beats_server_beats_environment(bot: ChatBot, llm_server: LLMServer) -> None:
    assert model_and_prompt(await ask(bot, llm_server)) == ("test-model", DEFAULT_SYSTEM_PROMPT)
    said(await bot.tomori("model", models="openai:server-model", scope="server"))
    said(await bot.tomori("prompt", text="Server prompt.", scope="server"))
    assert model_and_prompt(await ask(bot, llm_server)) == ("server-model", "Server prompt.")
    said(await bot.tomori("prompt", text="Channel prompt."))
    assert model_and_prompt(await ask(bot, llm_server)) == ("server-model", "Channel prompt.")
    _, shown = said(await bot.tomori("show"))
    assert "Models: openai:server-model (this server)" in shown
    assert "System prompt (this channel):\n> Channel prompt." in shown
    said(await bot.tomori("reset"))
    said(await bot.tomori("model", models="openai:channel-model"))
    here, there = await ask(bot, llm_server), await ask(bot, llm_server, channel=OTHER_CHANNEL)
    assert model_and_prompt(here) == ("channel-model", "Server prompt.")
    assert model_and_prompt(there) == ("server-model", "Server prompt.")
    _, shown = said(await bot.tomori("show"))
    assert "Models: openai:channel-model (this channel)" in shown
    assert "System prompt (this server):\n> Server prompt." in shown
    said(await bot.tomori("reset"))
    # shown, not asked: a sixth answer in one channel within five seconds waits its bucket
    _, shown = said(await bot.tomori("show"))
    assert "Models: openai:server-model (this server)" in shown
    said(await bot.tomori("reset", scope="server"))
    assert model_and_prompt(await ask(bot, llm_server)) == ("test-model", DEFAULT_SYSTEM_PROMPT)
    _, shown = said(await bot.tomori("show"))
    assert "Models: openai:test-model (the bot's settings)" in shown
    assert (  # the budget each model's requests are fitted to (a local server's, by default)
        "Context: openai:test-model 4096 tokens (the default for a server of OPENAI_BASE_URL), "
        "1024 of them kept for the answer" in shown
    )


async def test_show_says_the_summaries_and_memories_in_force_beside_the_budget(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    """What a turn's model is shown beyond the messages, and its bounds: the summary's writer
    (TOMORI_SUMMARY_MODEL, else the chain's first), the memories' bounds, and the server's
    own no to memories."""
    on = settings(database, summaries=True, summary_model="openai:summarizer", memory_days=0)
    bot = await open_bot(on, chain_for(llm_server, "openai:test-model, openai:other"))
    _, shown = said(await bot.tomori("show"))
    assert (
        "Summaries: on, written by openai:summarizer (TOMORI_SUMMARY_MODEL) in at most 300 "
        "tokens (its note at most 1/8 of each model's room), kept until forgotten" in shown
    )
    assert (
        "Memories: on, at most 10 shown a turn (its note at most 1/8 of each model's room), "
        "100 kept per scope, 300 characters each, kept until forgotten" in shown
    )
    assert shown.index("Context: ") < shown.index("Summaries: ") < shown.index("Memories: ")
    said(await bot.tomori("memory off"))
    _, shown = said(await bot.tomori("show"))
    assert "Memories: off in this server (/tomori memory off)" in shown


async def test_show_says_summaries_and_memories_are_off_where_the_author_turned_them_off(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    off = settings(database, summaries=False, memories=False)
    bot = await open_bot(off, chain_for(llm_server))
    _, shown = said(await bot.tomori("show"))
    assert "Summaries: off (TOMORI_SUMMARIES=0)" in shown
    assert "Memories: off (TOMORI_MEMORIES=0)" in shown


async def test_a_bad_chain_or_a_too_long_prompt_is_refused_and_nothing_is_stored(
    bot: ChatBot, llm_server: LLMServer, database: DatabaseUnderTest
) -> None:
    title, text = said(await bot.tomori("model", models="openai:ok,nope:model"))
    assert title == "Not Changed"
    assert "'nope:model' names an unknown provider 'nope'" in text
    title, text = said(await bot.tomori("model", models="openai"))
    assert title == "Not Changed"
    assert "'openai' is not provider:model" in text
    title, text = said(await bot.tomori("prompt", text="x" * (MAX_PROMPT_CHARS + 1)))
    assert title == "Not Changed"
    assert f"at most {MAX_PROMPT_CHARS}" in text
    title, text = said(await bot.tomori("limits", cooldown_ms=5_000, daily_tokens=10**12))
    assert title == "Not Changed"
    assert "daily_tokens" in text
    title, _ = said(await bot.tomori("limits", cooldown_ms=10**9))
    assert title == "Not Changed"
    title, text = said(await bot.tomori("model", models="openai:m", scope="everywhere"))
    assert (title, "it must be one of channel, server" in text) == ("Not Changed", True)
    assert await database.rows("SELECT * FROM channel_settings") == []
    assert await database.rows("SELECT * FROM server_settings") == []  # no half of the limits
    assert model_and_prompt(await ask(bot, llm_server)) == ("test-model", DEFAULT_SYSTEM_PROMPT)


async def test_an_admin_chooses_only_models_the_author_allows(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    """A public bot is in servers anyone can own: no admin points its turns at a model the
    author did not allow, on the author's key (a persona's models: tests/cog/test_personas)."""
    bot = await open_bot(settings(database), chain_for(llm_server))  # nothing else allowed
    title, text = said(await bot.tomori("model", models="openai:test-model, openai:gpt-4o"))
    assert title == "Not Changed"
    assert text == (
        "openai:gpt-4o is not among the models this bot allows; its author allows openai:test-model"
    )
    title, text = said(await bot.tomori("model", models="openai:other", scope="server"))
    assert (title, "openai:other is not among" in text) == ("Not Changed", True)
    assert await database.rows("SELECT * FROM channel_settings") == []
    assert await database.rows("SELECT * FROM server_settings") == []
    assert (await ask(bot, llm_server))["model"] == "test-model"


async def test_a_chain_stored_before_the_author_narrowed_the_list_is_not_run(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    first = await open_bot(settings(database), chain_for(llm_server, allowed="openai:*"))
    said(await first.tomori("model", models="openai:pricey"))
    assert (await ask(first, llm_server))["model"] == "pricey"
    await first.stop()
    second = await open_bot(settings(database), chain_for(llm_server))  # narrowed since
    assert (await ask(second, llm_server))["model"] == "test-model"


async def ask_with_image(bot: ChatBot, llm_server: LLMServer, files: FileServer) -> list[str]:
    """A mention with a PNG, answered; the images the model got."""
    seen = len(llm_server.requests)
    llm_server.script(answer("A dot."))
    picture = files.attachment("dot.png", PIXEL, "image/png")
    await bot.say(f"{bot.mention()} what is this?", attachments=[picture])
    await bot.settled()
    assert len(llm_server.requests) == seen + 1
    return images_sent(seen, llm_server)


async def test_an_admin_cannot_send_images_to_a_model_the_author_did_not(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    """Reading an image costs the author's tokens and memory: `+vision` is the author's to
    give, and a chain an admin marks `+vision` on any other model is refused."""
    bot = await open_bot(settings(database), chain_for(llm_server))  # no +vision
    title, text = said(await bot.tomori("model", models="openai:test-model+vision"))
    assert (title, text) == (
        "Not Changed",
        "openai:test-model may not be sent images (+vision) on this bot: images cost its "
        "author's tokens, and its author allows them for no model",
    )
    title, _ = said(await bot.tomori("model", models="openai:test-model+vision", scope="server"))
    assert title == "Not Changed"
    assert await database.rows("SELECT * FROM channel_settings") == []
    assert await database.rows("SELECT * FROM server_settings") == []
    assert await ask_with_image(bot, llm_server, files) == []
    assert files.fetched["dot.png"] == 0  # not even read


async def test_a_pattern_marked_vision_lets_an_admin_send_its_models_images(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    allowed = "openai:test-*+vision, openai:*"
    bot = await open_bot(settings(database), chain_for(llm_server, allowed=allowed))
    title, text = said(await bot.tomori("model", models="openai:other+vision"))
    assert (title, text) == (
        "Not Changed",
        "openai:other may not be sent images (+vision) on this bot: images cost its author's "
        "tokens, and its author allows them for openai:test-*+vision",
    )
    said(await bot.tomori("model", models="openai:test-model+vision"))
    assert await ask_with_image(bot, llm_server, files) == [f"data:image/png;base64,{PIXEL_B64}"]


async def test_a_chain_stored_with_vision_before_the_author_took_it_away_reads_no_image(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    first = await open_bot(settings(database), chain_for(llm_server, "openai:test-model+vision"))
    said(await first.tomori("model", models="openai:test-model+vision"))
    await first.stop()
    second = await open_bot(settings(database), chain_for(llm_server))  # images off since
    assert await ask_with_image(second, llm_server, files) == []
    assert files.fetched["dot.png"] == 0


async def test_a_provider_the_bot_has_no_key_for_is_refused(
    bot: ChatBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    title, text = said(await bot.tomori("model", models="gemini:gemini-2.5-flash"))
    assert title == "Not Changed"
    assert "needs GEMINI_API_KEY, which is not set" in text


async def test_a_provider_only_a_channels_chain_names_is_built_and_closed(
    bot: ChatBot, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-test-key")
    monkeypatch.setenv("GEMINI_BASE_URL", llm_server.base_url)
    said(await bot.tomori("model", models="gemini:channel-gemini"))
    llm_server.script(Reply(body=[sse(response(text_part("From Gemini."), finish="STOP"))]))
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    assert "channel-gemini" in llm_server.requests[-1].path
    assert await bot.contents() == ["From Gemini."]
    config = bot.chat.config
    assert set(config.providers) == {"openai", "gemini"}
    await bot.stop()
    assert config.providers == {}
    for connection in llm_server.connections:
        await asyncio.wait_for(connection.closed.wait(), 2)


async def test_autoreply_answers_every_message_in_the_channel_until_turned_off(
    bot: ChatBot, llm_server: LLMServer
) -> None:
    await bot.say("just chatting")
    await bot.settled()
    assert llm_server.requests == []
    said(await bot.tomori("autoreply", enabled=True))
    llm_server.script(answer("Hello, chatter."))
    await bot.say("still chatting")
    await bot.say("in another channel", channel=OTHER_CHANNEL)
    await bot.settled()
    assert [m.content for m in await bot.messages()] == ["Hello, chatter."]
    said(await bot.tomori("autoreply", enabled=False))
    await bot.say("chatting on")
    await bot.settled()
    assert len(llm_server.requests) == 1


async def test_autoreply_where_the_bot_cannot_post_says_so(bot: ChatBot) -> None:
    bot.deny(SEND_MESSAGES)
    title, text = said(await bot.tomori("autoreply", enabled=True))
    assert title == "Tomori Settings"
    assert text.startswith(  # Discord drops what depends on sending too: embed links
        "This channel now answers every message, but the bot cannot post here yet"
        " (no send_messages permission"
    )


async def test_autoreply_off_beats_the_environments_channel_list(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(
        settings(database, channels=frozenset({CHANNEL_ID})), chain_for(llm_server, allowed="*")
    )
    said(await bot.tomori("autoreply", enabled=False))
    await bot.say("chatting")
    await bot.settled()
    assert llm_server.requests == []
    _, shown = said(await bot.tomori("show"))
    assert "Answers every message: no (this channel)" in shown


async def test_settings_survive_a_restart(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    first = await open_bot(settings(database), chain_for(llm_server, allowed="*"))
    said(await first.tomori("model", models="openai:kept-model", scope="server"))
    said(await first.tomori("prompt", text="Kept prompt."))
    said(await first.tomori("autoreply", enabled=True))
    said(await first.tomori("limits", cooldown_ms=1_500, daily_tokens=20_000))
    said(await first.tomori("scenes", enabled=False))
    await first.stop()
    second = await open_bot(settings(database), chain_for(llm_server, allowed="*"))
    llm_server.script(answer("Back."))
    await second.say("are you there")  # no mention: the channel answers every message
    await second.settled()
    body = llm_server.requests[-1].body
    assert model_and_prompt(body) == ("kept-model", "Kept prompt.")
    resolved = await second.chat.config.resolved(GUILD_ID, CHANNEL_ID, cached=False)
    assert (resolved.cooldown_ms.value, resolved.daily_tokens.value) == (1_500, 20_000)
    _, shown = said(await second.tomori("show"))
    assert "Limits: cooldown 1500 ms, daily tokens per user 20000" in shown
    assert "Scenes: off (this server)" in shown
    assert not resolved.scenes.value


async def test_limits_set_one_at_a_time_keep_the_other_and_zero_turns_one_off(
    bot: ChatBot,
) -> None:
    said(await bot.tomori("limits", cooldown_ms=2_000))
    said(await bot.tomori("limits", daily_tokens=0))
    resolved = await bot.chat.config.resolved(GUILD_ID, CHANNEL_ID, cached=False)
    assert (resolved.cooldown_ms.value, resolved.daily_tokens.value) == (2_000, 0)
    assert await bot.chat.config.user_limits(GUILD_ID) == UserLimits(2.0, 0)
    said(await bot.tomori("reset", scope="server"))
    environment = UserLimits(0.0, 0)  # the settings these tests run with set neither
    assert await bot.chat.config.user_limits(GUILD_ID) == environment  # at once
    assert await bot.chat.config.user_limits(None) == environment  # a direct message
    title, text = said(await bot.tomori("limits"))
    assert (title, text) == ("Not Changed", "Give cooldown_ms, daily_tokens or both.")


async def test_status_counts_what_happened_in_the_server(
    database: DatabaseUnderTest, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    quick = {
        "stream_first_token_timeout_ms": 300,
        "stream_sdk_call_timeout_ms": 300,
        "model_probe_interval_ms": 0,  # a stalled model is not skipped: each turn asks it
    }
    bot = await open_bot(settings(database, **quick), chain_for(llm_server, allowed="*"))
    said(await bot.tomori("model", models="openai:first,openai:second"))
    llm_server.script(answer("One."))  # first answers
    await bot.say(f"{bot.mention()} one")
    await bot.settled()
    llm_server.script(silent(), answer("Two!"))  # first stalls before a token; second answers
    await bot.say(f"{bot.mention()} two")
    await bot.settled()
    _, text = said(await bot.tomori("status"))
    assert text.splitlines()[:3] == [
        "Turns per model: openai:first 2, openai:second 1",
        "Stalls: first token 1, idle 0",
        "Fallbacks used: 1",
    ]
    llm_server.script(stalled_after("Thinking.\n\n"))  # stopped by /kill
    bot.sent_event.clear()
    await bot.say(f"{bot.mention()} three")
    await bot.sent_event.wait()
    await bot.kill()
    await bot.settled()
    await database.execute(  # another server's turn is not this one's
        "INSERT INTO turn_outcomes (guild_id, channel_id, model, outcome, phase, fallback,"
        " recorded_at) VALUES ('1', '1', 'openai:first', 'error', NULL, 0, 1e12)"
    )
    await database.execute(
        "INSERT INTO token_usage (guild_id, channel_id, model, input_tokens, output_tokens,"
        " recorded_at) VALUES ('1', '1', 'openai:first', 500, 500, 1e12)"
    )
    title, text = said(await bot.tomori("status"))
    # The turn /kill stopped reported no usage: its characters are counted instead.
    [(tokens_in, tokens_out)] = await database.rows(
        "SELECT SUM(input_tokens), SUM(output_tokens) FROM token_usage"
        f" WHERE guild_id = '{GUILD_ID}'"
    )
    assert tokens_in > 10 + 10
    assert tokens_out > len("One.") // 4 + len("Two!") // 4
    assert title == "Tomori in this server, last 24 hours"
    *lines, traffic = text.splitlines()
    assert traffic.startswith("Discord requests: ")  # (the bot's; this Discord has no limits)
    assert "429s in 10 min: none; invalid requests in 10 min: 0 of 10,000 allowed" in traffic
    assert lines == [
        "Turns per model: openai:first 3, openai:second 1",
        "Stalls: first token 1, idle 0",
        "Fallbacks used: 1",
        "Stopped by /kill: 1; for a follow-up: 0",
        "Errors: 0; empty answers: 0",
        f"Tokens: {tokens_in} in, {tokens_out} out",
        "Tool calls: none",
        "Sprites shown: none",
        "Models skipped now: none",
    ]


async def test_the_group_is_for_servers_and_members_who_can_manage_them(bot: ChatBot) -> None:
    registered = bot.registered("tomori")
    assert registered.default_member_permissions == MANAGE_GUILD
    assert registered.guild_only
    assert registered.options == {
        "model",
        "prompt",
        "autoreply",
        "show",
        "reset",
        "status",
        "limits",
        "persona",
        "sprite",
        "tools",
        "scenes",
        "prefill",
        "followups",
        "swipes",
        "progress",
        "errors",
        "memory",
    }
    respond = bot.registered("respond")  # a prefill puts words in the bot's mouth
    assert respond.default_member_permissions == MANAGE_GUILD
    assert respond.guild_only
    assert respond.options == {"persona", "prompt", "prefill"}


async def test_kill_clears_a_message_still_waiting_for_its_servers_limits(
    pg_url: str, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    """A message asked before /kill is cleared by it, however long its checks waited."""
    database = postgres_database(pg_url)
    bot = await open_bot(settings(database), chain_for(llm_server, allowed="*"))
    blocker = await asyncpg.connect(pg_url)
    try:
        holding = blocker.transaction()
        await holding.start()  # a migration, say: no server's settings can be read meanwhile
        await blocker.execute("LOCK TABLE server_settings IN ACCESS EXCLUSIVE MODE")
        llm_server.script(answer("Asked before the kill."))
        await bot.say(f"{bot.mention()} hello")
        async with asyncio.timeout(5):  # the message waits for its server's limits
            while not await blocker.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        await bot.kill()
        await holding.rollback()
        async with asyncio.timeout(10):
            await bot.settled()
    finally:
        await blocker.close()
    assert llm_server.requests == []
    assert await bot.contents() == []


async def test_kill_stops_a_turn_still_reading_its_channels_settings(
    pg_url: str, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    database = postgres_database(pg_url)
    bot = await open_bot(settings(database), chain_for(llm_server, allowed="*"))
    blocker = await asyncpg.connect(pg_url)
    await bot.chat.config.user_limits(GUILD_ID)  # the server's limits, read: admission passes
    try:
        holding = blocker.transaction()
        await holding.start()  # a migration, say: the settings cannot be read meanwhile
        await blocker.execute("LOCK TABLE channel_settings IN ACCESS EXCLUSIVE MODE")
        llm_server.script(answer("Too late."))
        await bot.say(f"{bot.mention()} hello")
        async with asyncio.timeout(5):
            while not bot.typing:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        reply = await bot.kill()
        assert reply["data"]["embeds"][0]["title"] == KILL_STOPPED.title
        async with asyncio.timeout(3):  # the turn ends now, not when the read would give up
            await bot.settled()
        await holding.rollback()
    finally:
        await blocker.close()
    assert llm_server.requests == []
    assert await bot.contents() == []
