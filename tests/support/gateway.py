"""Discord's gateway, as much of it as a bot needs to connect, lose its connection and resume.

A websocket server on 127.0.0.1 speaking the gateway's JSON (uncompressed text frames, which
both libraries read as they are): HELLO, then READY (the bot's user and the guild of
tests/support/world.py) for an IDENTIFY, or RESUMED for a RESUME; heartbeats acknowledged;
a request for the guild's members answered with one empty chunk. `cut` closes every connection
with 4000 (an unknown error: the library resumes) and refuses new ones (503 on the upgrade, as
a gateway out of reach) until `restore`.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import WSMsgType, web

HEARTBEAT_MS = 45_000
CLOSE_WAIT_S = 0.5
"""How long a cut waits for the client's answer to its close: a gateway gone does not wait."""


class GatewayServer:
    def __init__(self, bot_user: dict[str, Any], application_id: int, guild: dict[str, Any]):
        self._user = bot_user
        self._application_id = application_id
        self._guild = guild
        self._open: set[web.WebSocketResponse] = set()
        self._down = False
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.identified = 0
        self.resumed = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/", self._connect)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"ws://{host}:{port}/"

    async def close(self) -> None:
        for ws in list(self._open):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def cut(self) -> None:
        """Every connection closed (4000), and none taken until `restore`."""
        self._down = True
        for ws in list(self._open):
            await ws.close(code=4000, message=b"cut by the test")

    def restore(self) -> None:
        self._down = False

    async def _connect(self, request: web.Request) -> web.StreamResponse:
        if self._down:
            return web.Response(status=503, text="the gateway is out of reach")
        ws = web.WebSocketResponse(timeout=CLOSE_WAIT_S)
        await ws.prepare(request)
        self._open.add(ws)
        sequence = 0

        async def dispatch(event: str, data: Any) -> None:
            nonlocal sequence
            sequence += 1
            await ws.send_str(json.dumps({"op": 0, "t": event, "s": sequence, "d": data}))

        try:
            await ws.send_str(_frame(10, {"heartbeat_interval": HEARTBEAT_MS}))
            async for message in ws:
                if message.type is not WSMsgType.TEXT:
                    continue
                payload = json.loads(message.data)
                op, data = payload.get("op"), payload.get("d")
                if op == 1:
                    await ws.send_str(_frame(11, None))
                elif op == 2:
                    self.identified += 1
                    await dispatch("READY", self._ready())
                elif op == 6:
                    self.resumed += 1
                    await dispatch("RESUMED", {})
                elif op == 8:
                    await dispatch(
                        "GUILD_MEMBERS_CHUNK",
                        {
                            "guild_id": str(data["guild_id"]),
                            "members": [],
                            "chunk_index": 0,
                            "chunk_count": 1,
                            "nonce": data.get("nonce"),
                        },
                    )
        finally:
            self._open.discard(ws)
        return ws

    def _ready(self) -> dict[str, Any]:
        return {
            "v": 10,
            "user": self._user,
            "guilds": [self._guild],
            "session_id": "test-session",
            "resume_gateway_url": self.url,
            "application": {"id": str(self._application_id), "flags": 0},
            "private_channels": [],
            "relationships": [],
        }


def _frame(op: int, data: Any) -> str:
    """A frame that is no dispatch: no sequence, no event name (the libraries read both)."""
    return json.dumps({"op": op, "d": data, "s": None, "t": None})
