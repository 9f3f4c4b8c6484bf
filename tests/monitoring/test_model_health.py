"""A model that just stalled is not asked again and again: turns skip it until a probe says.

With a primary that accepts connections and never answers, every message used to wait the
whole first-token budget before its fallback. Now the first turn that meets the stall marks
the model sick, in the database every process shares; the next turns, in any process, start
on the next model at once; one probe at a time finds when it answers again, and from then on
turns ask it first again. `/tomori status` and the log say which models are skipped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.support.cog_settings import SHORT_BUDGETS, chain_for
from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer, Reply, SeenRequest
from tests.support.nextcord_fake import CHANNEL_IDS, NextcordBot, OpenNextcord
from tests.support.scripts import answer, silent
from tests.support.tomori_commands import nextcord_tomori, said
from tomori.generation.health import Ailment

CHAIN = "openai:primary,openai:fallback"
PRIMARY = "openai:primary"


class Models:
    """What each model does when asked, changed as a test goes on."""

    def __init__(self) -> None:
        self.replies: dict[str, Callable[[], Reply]] = {
            "primary": silent,
            "fallback": lambda: answer("The fallback answered."),
        }

    def reply(self, request: SeenRequest) -> Reply:
        return self.replies[request.body["model"]]()


@pytest.fixture
def models() -> Models:
    return Models()


@pytest.fixture
async def server(models: Models) -> AsyncIterator[LLMServer]:
    server = LLMServer(default=models.reply)
    await server.start()
    yield server
    await server.close()


def asked(server: LLMServer) -> list[str]:
    return [request.body["model"] for request in server.requests]


async def open_bot(
    open_nextcord: OpenNextcord,
    database: DatabaseUnderTest,
    server: LLMServer,
    **overrides: Any,
) -> NextcordBot:
    budgets = {**SHORT_BUDGETS, "stream_first_token_timeout_ms": 1_000}
    settings = database.settings(**{**budgets, **overrides})
    return await open_nextcord(settings, chain_for(server, CHAIN))


async def test_a_stalled_primary_is_skipped_at_once_by_the_next_turn(
    open_nextcord: OpenNextcord,
    database: DatabaseUnderTest,
    server: LLMServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    nc = await open_bot(open_nextcord, database, server, model_probe_interval_ms=60_000)
    with caplog.at_level(logging.WARNING):
        nc.say(f"{nc.mention()} one")
        await nc.settled()
    assert nc.discord.embeds() == ["Fallback Model Used"]
    assert any(
        PRIMARY in r.getMessage() and "turns skip it" in r.getMessage() for r in caplog.records
    )

    started = time.monotonic()
    nc.say(f"{nc.mention()} two")
    await nc.settled()
    assert time.monotonic() - started < 0.5  # not the 1 s first-token budget again
    assert asked(server) == ["primary", "fallback", "fallback"]
    assert nc.discord.contents() == ["The fallback answered."] * 2
    assert nc.discord.embeds() == ["Fallback Model Used"]  # no failure in the second turn

    _, text = said(await nextcord_tomori(nc, "status"))
    assert f"Models skipped now: {PRIMARY} ({Ailment.FIRST_TOKEN_STALL}, since <t:" in text


async def test_a_probe_finds_the_model_answering_again_and_turns_ask_it_first(
    open_nextcord: OpenNextcord, database: DatabaseUnderTest, server: LLMServer, models: Models
) -> None:
    nc = await open_bot(open_nextcord, database, server, model_probe_interval_ms=300)
    nc.say(f"{nc.mention()} one")
    await nc.settled()
    health = nc.chat.runtime.health
    assert health is not None
    assert health.sick(PRIMARY) is not None
    async with asyncio.timeout(10):  # a probe or two still meets the stall
        while asked(server).count("primary") < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    models.replies["primary"] = lambda: answer("ready")
    async with asyncio.timeout(10):
        while health.sick(PRIMARY) is not None:  # noqa: ASYNC110
            await asyncio.sleep(0.02)

    models.replies["primary"] = lambda: answer("The primary is back.")
    nc.say(f"{nc.mention()} two")
    await nc.settled()
    assert nc.discord.contents()[-1] == "The primary is back."
    assert server.most_in_flight <= 1  # one probe at a time, never beside a turn's request


async def test_another_process_skips_the_model_one_process_found_sick(
    open_nextcord: OpenNextcord, database: DatabaseUnderTest, server: LLMServer
) -> None:
    first = await open_bot(open_nextcord, database, server, model_probe_interval_ms=60_000)
    second = await open_bot(open_nextcord, database, server, model_probe_interval_ms=60_000)
    await second.chat.ensure_started()
    first.say(f"{first.mention()} one")
    await first.settled()
    assert asked(server) == ["primary", "fallback"]

    health = second.chat.runtime.health
    assert health is not None
    async with asyncio.timeout(5):  # the other process reads the table within a second
        while health.sick(PRIMARY) is None:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    started = time.monotonic()
    second.say(f"{second.mention()} two", channel=CHANNEL_IDS[1])
    await second.settled()
    assert time.monotonic() - started < 0.5
    assert asked(server) == ["primary", "fallback", "fallback"]


async def test_a_model_sick_at_one_server_is_still_asked_first_at_another(
    open_nextcord: OpenNextcord, database: DatabaseUnderTest, server: LLMServer
) -> None:
    """Health is kept per endpoint and model: a process whose `OPENAI_BASE_URL` is another
    server asks its own `primary` first, though one of that name stalls at the first's."""
    first = await open_bot(open_nextcord, database, server, model_probe_interval_ms=60_000)
    first.say(f"{first.mention()} one")
    await first.settled()
    assert asked(server) == ["primary", "fallback"]  # primary is sick at `server`

    elsewhere = LLMServer(default=lambda request: answer(f"{request.body['model']} answered."))
    await elsewhere.start()
    try:
        second = await open_bot(open_nextcord, database, elsewhere, model_probe_interval_ms=60_000)
        health = second.chat.runtime.health
        assert health is not None
        await health._refresh()  # what its loop does each second: it reads the marks now
        assert health.sick(PRIMARY) is None
        second.say(f"{second.mention()} two", channel=CHANNEL_IDS[1])
        await second.settled()
        assert asked(elsewhere) == ["primary"]
        assert second.discord.contents(CHANNEL_IDS[1]) == ["primary answered."]
    finally:
        await elsewhere.close()
    marked = await database.rows("SELECT endpoint, model FROM model_health")
    assert marked == [(f"{server.base_url}/v1", PRIMARY)]


async def test_with_the_interval_at_zero_no_model_is_ever_skipped(
    open_nextcord: OpenNextcord, database: DatabaseUnderTest, server: LLMServer
) -> None:
    nc = await open_bot(open_nextcord, database, server, model_probe_interval_ms=0)
    for question in ("one", "two"):
        nc.say(f"{nc.mention()} {question}")
        await nc.settled()
    assert asked(server) == ["primary", "fallback", "primary", "fallback"]
    assert nc.chat.runtime.health is None
