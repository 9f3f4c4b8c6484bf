"""A Discord of the test's for the `tomori` command run as a process: as much of the REST API
and the gateway as it needs to log in, sync its commands and identify, and the ways Discord
refuses or fails it (a gateway close code, a failed sync)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import WSMsgType, web

from tests.support.command import OTHER_LIBRARY, command_without, environment

GOOD = {"DISCORD_TOKEN": "x", "TOMORI_MODELS": "openai:m", "OPENAI_API_KEY": "k"}
"""A configuration the command starts with (its model is never asked)."""


def gateway_at(library: str, url: str) -> str:
    """Python lines that send discord.py's gateway connection to `url`: nextcord asks the REST
    API where the gateway is, so DISCORD_API_URL already sends it to the test's; discord.py
    connects to Discord's own gateway address when it is given its shards."""
    if library == "nextcord":
        return ""
    return (
        "import discord.gateway, yarl\n"
        f"discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL({url!r})"
    )


@dataclass
class FakeDiscord:
    port: int
    identified: asyncio.Queue[object] = field(default_factory=asyncio.Queue)
    """The shards the IDENTIFYs name, in turn."""
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once a sync of the application's commands was answered."""


@asynccontextmanager
async def a_fake_discord(
    close_identify_with: int | None = None, commands_status: int = 200, ready: bool = False
) -> AsyncIterator[FakeDiscord]:
    """A Discord of the test's on 127.0.0.1, as much of it as the command needs to log in,
    sync its commands and identify.

    `close_identify_with`: the gateway closes the connection with this code on IDENTIFY (4014:
    a privileged intent the application was not granted); `commands_status`: the status the
    commands' sync is answered (400: Discord refusing them); `ready`: READY (in no server)
    answers an IDENTIFY, upon which nextcord syncs the commands (a stop signal may then cut
    that sync, which logs its error)."""
    discord = FakeDiscord(0)

    def answer(data: object) -> web.Response:  # nextcord reads JSON only when it is this type
        return web.Response(body=json.dumps(data).encode(), content_type="application/json")

    user = {"id": "1", "username": "tomori", "discriminator": "0", "avatar": None, "bot": True}
    session = {  # in no server yet
        "v": 10,
        "user": user,
        "guilds": [],
        "session_id": "s",
        "resume_gateway_url": "ws://127.0.0.1:1/ws",  # never resumed: closed with the test
        "application": {"id": "1", "flags": 1 << 19},
        "private_channels": [],
        "relationships": [],
    }

    async def me(request: web.Request) -> web.Response:
        return answer(user)

    async def application(request: web.Request) -> web.Response:  # discord.py's login reads it
        owner = {"id": "7", "username": "author", "discriminator": "0", "avatar": None}
        return answer(
            {
                "id": "1",
                "name": "tomori",
                "icon": None,
                "description": "",
                "bot_public": True,
                "bot_require_code_grant": False,
                "verify_key": "k",
                "flags": 1 << 19,
                "owner": owner,
            }
        )

    def refused() -> web.Response | None:
        """The sync's failure, if the test asked for one (at its first request)."""
        if commands_status == 200:
            return None
        asyncio.get_running_loop().call_soon(discord.synced.set)  # once answered
        failed = {"message": f"{commands_status}: refused by the test", "code": 0}
        return web.json_response(failed, status=commands_status)

    async def commands_stored(request: web.Request) -> web.Response:  # nextcord compares first
        return refused() or answer([])

    async def commands_synced(request: web.Request) -> web.Response:
        synced = await request.json()  # as Discord stores them: with their ids
        asyncio.get_running_loop().call_soon(discord.synced.set)  # once answered
        if (failed := refused()) is not None:
            return failed
        stored = {"description": "", "application_id": "1", "version": "1"}  # menus' too
        return answer([{**stored, **c, "id": str(10 + i)} for i, c in enumerate(synced)])

    async def gateway(request: web.Request) -> web.Response:
        return answer({"url": f"ws://127.0.0.1:{discord.port}/ws"})

    async def websocket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        hello = {"op": 10, "s": None, "t": None, "d": {"heartbeat_interval": 45_000}}
        await ws.send_str(json.dumps(hello))
        async for message in ws:
            if message.type == WSMsgType.TEXT and json.loads(message.data)["op"] == 2:
                await discord.identified.put(json.loads(message.data)["d"].get("shard"))
                if close_identify_with is not None:
                    await ws.close(code=close_identify_with, message=b"Disallowed intent(s).")
                elif ready:
                    await ws.send_str(json.dumps({"op": 0, "t": "READY", "s": 1, "d": session}))
        return ws

    app = web.Application()
    app.router.add_get("/api/v10/users/@me", me)
    app.router.add_get("/api/v10/gateway", gateway)
    app.router.add_get("/api/v10/oauth2/applications/@me", application)
    app.router.add_get("/api/v10/applications/1/commands", commands_stored)
    app.router.add_put("/api/v10/applications/1/commands", commands_synced)
    app.router.add_get("/ws", websocket)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    discord.port = runner.addresses[0][1]
    try:
        yield discord
    finally:
        await runner.cleanup()


async def the_command_on(port: int, library: str, **env: str) -> asyncio.subprocess.Process:
    """The command started with `env` against the fake Discord on `port`, found where
    DISCORD_API_URL says (as a rate-limit proxy would be), on an install with `library` alone."""
    return await asyncio.create_subprocess_exec(
        *command_without(OTHER_LIBRARY[library], gateway_at(library, f"ws://127.0.0.1:{port}/ws")),
        env=environment(**GOOD, DISCORD_API_URL=f"http://127.0.0.1:{port}/api/v10/", **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
