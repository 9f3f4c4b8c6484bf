"""/readyz as an orchestrator's probe meets it: 200 while the bot's gateway is connected and its
database answers, 503 with the reason while either is away, and 200 again once it is back; a
real gateway connection (tests/support/gateway.py) and a real PostgreSQL stopped and started,
whose errors meanwhile the metrics count."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import discord.gateway
import pytest
import yarl

from tests.support.bots import Library
from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import DiscordRestServer
from tests.support.gateway import GatewayServer
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import guild_payload
from tests.support.postgres import PostgresServer
from tests.support.rest_bots import BOT_USER, RestBot, start_rest_bot
from tests.support.scrapes import probe, scrape
from tests.support.waiting import until
from tests.support.world import BOT_ID
from tomori.monitoring.serving import serving_metrics
from tomori_cog.readiness import GatewayWatch, readiness_of

pytestmark = pytest.mark.slow  # a PostgreSQL server stopped and started


@pytest.fixture
async def gateway(
    discord_rest: DiscordRestServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[GatewayServer]:
    server = GatewayServer(BOT_USER, BOT_ID, guild_payload())
    await server.start()
    discord_rest.gateway_url = server.url  # nextcord asks GET /gateway
    monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(server.url))
    yield server
    await server.close()


async def connected(bot: RestBot) -> asyncio.Task[None]:
    """The bot's gateway connection, as `bot.start` runs it after logging in."""
    bot.bot._connection.guild_ready_timeout = 0.1  # READY carries the guild whole
    watch = GatewayWatch(bot.bot)
    task = asyncio.create_task(bot.bot.connect(reconnect=True), name="gateway")
    await until(lambda: watch.connected, within=30)
    return task


async def readyz_until(url: str, status: int, within: float = 30.0) -> str:
    """/readyz's text once it answers `status` (a bot reconnecting takes its backoff's time)."""
    async with asyncio.timeout(within):
        while True:
            answered, text = await probe(url, "/readyz")
            if answered == status:
                return text
            await asyncio.sleep(0.05)


async def test_readyz_follows_the_gateway_and_the_database_away_and_back(
    tmp_path: Path,
    llm_server: LLMServer,
    library: Library,
    discord_rest: DiscordRestServer,
    gateway: GatewayServer,
    pg_server: PostgresServer,
    pg_url: str,
) -> None:
    settings = settings_for(tmp_path, db_url=pg_url, metrics_addr="127.0.0.1:0")
    bot = await start_rest_bot(library, discord_rest, settings, chain_for(llm_server))
    connection: asyncio.Task[None] | None = None
    try:
        async with serving_metrics(settings, bot.chat.exporter, ready=readiness_of(bot.bot)) as url:
            assert url is not None
            assert (await probe(url, "/readyz"))[0] == 503  # not connected yet
            connection = await connected(bot)
            assert await probe(url, "/readyz") == (200, "ready\n")

            await pg_server.stop()
            try:
                assert "database" in await readyz_until(url, 503)
                assert await probe(url, "/healthz") == (200, "ok\n")  # the process runs on
            finally:
                await pg_server.start()
            await readyz_until(url, 200)
            assert (await scrape(url)).total("tomori_database_errors_total") >= 1

            await gateway.cut()
            assert "gateway" in await readyz_until(url, 503)
            gateway.restore()
            await readyz_until(url, 200)
            assert gateway.resumed >= 1  # the same session, resumed
    finally:
        await bot.stop()
        if connection is not None:
            await bot.bot.close()
            connection.cancel()
            await asyncio.gather(connection, return_exceptions=True)
