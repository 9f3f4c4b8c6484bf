"""The `tomori` command and `tomori --check` reach Discord where DISCORD_API_URL says (a
rate-limit proxy in front of the bot's processes), and a token Discord refuses, or an intent
it was not granted, is said in one line."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.support.command import run
from tests.support.fake_discord import a_fake_discord, the_command_on


@pytest.fixture
async def refusing_discord() -> AsyncIterator[tuple[str, list[str]]]:
    """A Discord REST API that refuses every token, as Discord answers a bad one; the address
    to give DISCORD_API_URL and the paths it was asked."""
    asked: list[str] = []

    async def refuse(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.json_response({"message": "401: Unauthorized", "code": 0}, status=401)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", refuse)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}/api/v10", asked
    await runner.cleanup()


async def command(*args: str, **env: str) -> tuple[int, str, str]:
    """The command as `run` starts it, in a thread: the test's Discord answers meanwhile."""
    result = await asyncio.to_thread(run, *args, **env)
    return result.returncode, result.stdout, result.stderr


GOOD = {"TOMORI_MODELS": "openai:m", "OPENAI_API_KEY": "k"}


async def test_a_refused_token_stops_the_bot_with_one_line(
    refusing_discord: tuple[str, list[str]], tmp_path: Path
) -> None:
    api, asked = refusing_discord
    code, _, err = await command(
        **GOOD, DISCORD_TOKEN="bad", DISCORD_API_URL=api, TOMORI_DB_PATH=str(tmp_path / "t.db")
    )
    assert code == 2
    assert "error: Discord refused the token (401): check DISCORD_TOKEN" in err
    assert "Traceback" not in err
    assert asked == ["/api/v10/users/@me"]


async def test_the_check_logs_in_where_discord_api_url_says(
    refusing_discord: tuple[str, list[str]], tmp_path: Path
) -> None:
    api, asked = refusing_discord
    code, out, _ = await command(
        "--check",
        **GOOD,
        DISCORD_TOKEN="bad",
        DISCORD_API_URL=api,
        TOMORI_DB_PATH=str(tmp_path / "t.db"),
        OPENAI_BASE_URL=f"{api}/none",  # the model check fails too; the line read is Discord's
    )
    assert "FAILED  discord: the token was refused (401): check DISCORD_TOKEN" in out
    assert "/api/v10/users/@me" in asked
    assert code == 1


async def test_the_check_refuses_a_discord_api_url_the_bot_would_refuse() -> None:
    code, _, err = await command("--check", **GOOD, DISCORD_API_URL="ftp://x/api/v10")
    assert code == 2
    assert err.startswith("error: DISCORD_API_URL='ftp://x/api/v10' is not allowed")


@pytest.mark.parametrize("log_format", ["text", "json"])
async def test_a_missing_message_content_intent_stops_the_bot_with_one_line(
    tmp_path: Path, library: str, log_format: str
) -> None:
    """Discord closes the gateway with 4014 when the application was not granted the Message
    Content intent: the command says where to turn it on, and exits as for a refused token."""
    async with a_fake_discord(close_identify_with=4014) as discord:
        process = await the_command_on(
            discord.port,
            library,
            TOMORI_DB_PATH=str(tmp_path / "t.db"),
            TOMORI_LOG_FORMAT=log_format,
        )
        try:
            async with asyncio.timeout(30):
                _, raw = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    err = raw.decode()
    assert not discord.identified.empty()  # it got as far as the gateway
    assert process.returncode == 2, err
    assert "Traceback" not in err
    assert err.splitlines()[-1] == INTENT_REFUSED
    assert err.count(INTENT_REFUSED) == 1


INTENT_REFUSED = (
    "error: Discord refused the gateway connection (4014): the bot needs the Message Content "
    "intent; turn it on at https://discord.com/developers/applications, in the application's "
    "Bot > Privileged Gateway Intents"
)
