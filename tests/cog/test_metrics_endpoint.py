"""TOMORI_METRICS_ADDR as an operator's Prometheus meets it: `/metrics` scraped while a turn
runs and after, parsed by the client's own parser, on both libraries; nothing a user wrote, and
no user, channel or server id, in any label."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.support.bots import ChatBot, Library, OpenBot, only_on
from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import pointed_at
from tests.support.llm_server import LLMServer, Reply, hold_until, sse
from tests.support.mcp_servers import ROOT, ROOT_VARIABLE, stdio_config
from tests.support.openai_wire import chunk
from tests.support.rest_bots import declare_world, rest_server, start_rest_bot
from tests.support.scrapes import leaks, probe, scrape
from tests.support.scripts import answer, finished, silent, tool_call
from tests.support.waiting import until
from tests.support.world import BOT_ID, CHANNEL_ID, GUILD_ID, Person
from tomori.monitoring.serving import serving_metrics
from tomori_cog.readiness import readiness_of

MANAGE_MESSAGES = 1 << 13
SECRET = "marmalade-zeppelin"
"""A word of the user's message, which no label may carry."""


async def test_a_turn_moves_the_counters_a_scrape_reads_and_no_label_names_anyone(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    settings = settings_for(tmp_path, metrics_addr="127.0.0.1:0")
    bot: ChatBot = await open_bot(settings, chain_for(llm_server, "openai:first,openai:second"))
    release = asyncio.Event()
    llm_server.script(
        silent(),  # the first model stalls before its first token: the second answers
        Reply(body=[sse(chunk("Hello ")), hold_until(release), *finished("there.")]),
    )
    async with serving_metrics(
        settings, bot.chat.exporter, ready=readiness_of(bot.chat.bot)
    ) as url:
        assert url is not None
        assert await probe(url, "/healthz") == (200, "ok\n")
        before = await scrape(url)
        assert before.total("tomori_turns_total") == 0
        posted = await bot.say(f"{bot.mention()} tell me about {SECRET}")
        await until(lambda: len(llm_server.requests) == 2)

        during = await scrape(url)  # the second model has begun its answer, and holds
        assert during.value("tomori_turns_running") == 1
        assert during.total("tomori_turns_total") == 0
        release.set()
        await bot.settled()

        after = await scrape(url)
    assert after.value("tomori_turns_running") == 0
    assert after.value("tomori_turns_total", outcome="done") == 1
    assert after.value("tomori_model_stalls_total", model="openai:first", phase="first_token") == 1
    assert after.value("tomori_model_fallbacks_total", model="openai:second") == 1
    assert after.value("tomori_model_parts_total", model="openai:first", outcome="timeout") == 1
    assert after.value("tomori_model_parts_total", model="openai:second", outcome="completed") == 1
    assert after.value("tomori_tokens_total", model="openai:second", kind="prompt") > 0
    assert after.value("tomori_tokens_total", model="openai:second", kind="completion") > 0
    assert after.value("tomori_turn_first_text_seconds_count") == 1
    assert after.value("tomori_turn_seconds_count") == 1
    assert after.value("tomori_turn_lock_wait_seconds_count") == 1
    first_text = after.value("tomori_turn_first_text_seconds_sum")
    assert 2.0 <= first_text <= after.value("tomori_turn_seconds_sum")  # the stall came first
    ids = [str(n) for n in (BOT_ID, CHANNEL_ID, GUILD_ID, Person.ALICE.id, posted.id)]
    assert leaks(after, [*ids, SECRET, "tell me", "Hello", "there"]) == []


async def test_discords_answers_its_429s_by_scope_and_a_kill_are_counted(
    tmp_path: Path, llm_server: LLMServer, library: Library
) -> None:
    """On the Discord-faithful REST server, through the library's own HTTP client: a global
    limit of two requests a second (another bot on the token, say) answers the turn's third
    with a global 429, which the library waits out; then /kill stops a turn."""
    settings = settings_for(tmp_path, metrics_addr="127.0.0.1:0")
    release = asyncio.Event()
    llm_server.script(answer("Fine."), Reply(body=[sse(chunk("Thinking")), hold_until(release)]))
    async with rest_server(global_limit=2) as server:
        declare_world(server)
        with pointed_at(server.api_base):
            bot = await start_rest_bot(library, server, settings, chain_for(llm_server))
            try:
                async with serving_metrics(
                    settings, bot.chat.exporter, ready=readiness_of(bot.bot)
                ) as url:
                    assert url is not None
                    bot.say(f"{bot.mention()} hello")
                    await bot.settled()
                    assert server.rate_limited["global"] >= 1  # what the test is about
                    bot.say(f"{bot.mention()} think hard")
                    await until(lambda: len(llm_server.requests) == 2)
                    await bot.kill(by=Person.BOB, permissions=MANAGE_MESSAGES)
                    await bot.tidied()  # the stopped answer's last edit and its buttons too
                    scraped = await scrape(url)
                    limited = server.rate_limited["global"]
            finally:
                release.set()
                await bot.stop()
    assert scraped.value("tomori_discord_requests_total") >= 3
    assert scraped.value("tomori_discord_rate_limited_total", scope="global") == limited
    assert scraped.value("tomori_kills_total", reason="kill") == 1
    assert scraped.value("tomori_turns_total", outcome="stopped") == 1
    assert scraped.value("tomori_turns_total", outcome="done") == 1


@only_on("nextcord", "a tool call is the core's: the library only carries the message")
async def test_an_mcp_call_is_counted_by_its_server_and_outcome_never_its_arguments(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ROOT_VARIABLE, str(ROOT))
    config, _ = stdio_config(tmp_path)
    settings = settings_for(tmp_path, mcp_config=config, metrics_addr="127.0.0.1:0")
    bot = await open_bot(settings, chain_for(llm_server))
    llm_server.script(tool_call("tests__echo", f'{{"text": "{SECRET}"}}'), answer("It echoed."))
    async with serving_metrics(
        settings, bot.chat.exporter, ready=readiness_of(bot.chat.bot)
    ) as url:
        assert url is not None
        await bot.say(f"{bot.mention()} echo the word")
        await bot.settled()
        scraped = await scrape(url)
    assert await bot.contents() == ["It echoed."]
    assert scraped.value("tomori_mcp_calls_total", server="tests", outcome="used") == 1
    assert leaks(scraped, [SECRET, "echo"]) == []
