"""Attachment bytes for the tests: a local HTTP server standing in for Discord's CDN.

The cog reads attachments over HTTP as it would from the CDN; the server counts what was asked
of it, so a test can see each file was read once per turn. `PIXEL` is a real one-pixel PNG.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PIXEL_B64 = base64.b64encode(PIXEL).decode()

_ids = itertools.count(700_000_000_000_000_000)


@dataclass
class FileServer:
    """Serves `files[name] = (bytes, content type)` at `/name`; counts each GET."""

    files: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    fetched: Counter[str] = field(default_factory=Counter)
    hanging: set[str] = field(default_factory=set)
    """Names whose GET is answered only when the server closes: a CDN that stopped answering."""
    _closing: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None
    port: int = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/{name}", self._serve)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def attachment(
        self,
        name: str,
        data: bytes,
        content_type: str | None,
        *,
        size: int | None = None,
    ) -> dict[str, Any]:
        """Serve `data` as `name` and return the attachment object Discord would send for it.

        `size` is the size Discord declares (the real one unless given); `content_type` None
        is an attachment Discord sent without one.
        """
        self.files[name] = (data, content_type or "application/octet-stream")
        payload: dict[str, Any] = {
            "id": str(next(_ids)),
            "filename": name,
            "size": len(data) if size is None else size,
            "url": self.url(name),
            "proxy_url": self.url(name),
        }
        if content_type is not None:
            payload["content_type"] = content_type
        return payload

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        self.fetched[name] += 1
        if name in self.hanging:
            await self._closing.wait()
        if name not in self.files:
            return web.Response(status=404)
        data, content_type = self.files[name]
        return web.Response(body=data, content_type=content_type.split(";")[0])
