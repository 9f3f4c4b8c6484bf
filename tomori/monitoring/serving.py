"""`/metrics`, `/healthz` and `/readyz` on `TOMORI_METRICS_ADDR`, served on the bot's own loop.

The run mode (the bot, the console) opens `serving_metrics` around everything it runs, so
`/healthz` answers from the start to the end of the process: 200 while it runs, whatever the
bot is doing. `/readyz` asks `ready`, the run mode's own judgement (the gateway connected and
the database answering, for the bot), within `READY_WITHIN_S`: 200 when it finds nothing wrong,
503 with its reason when it does or takes too long, so an orchestrator routes around a bot
that could not answer. `/metrics` is the exporter's scrape (`tomori.monitoring.exporter`).

The port may be open to anyone on the network, and each connection to it holds one of the
process's file descriptors, which the bot's turns need too. So a connection must send a whole
request within `READ_WITHIN_S` of opening or of its last answer (silent, half-sent and idle
keep-alive connections are closed), and past `MAX_CONNECTIONS` open at once a new one is closed
as soon as it is accepted.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web
from aiohttp.typedefs import Handler

from tomori.config.parsers import refused, split_address
from tomori.config.settings import Settings
from tomori.monitoring.exporter import Exporter
from tomori.monitoring.serving_logs import REFUSALS, REQUESTS, strangers_told_once_a_minute
from tomori.store import Database

log = logging.getLogger(__name__)

__all__ = [
    "MAX_CONNECTIONS",
    "READY_WITHIN_S",
    "READ_WITHIN_S",
    "Readiness",
    "database_answers",
    "serving_metrics",
]

Readiness = Callable[[], Awaitable[str | None]]
"""None when ready; else why not, in a few words (`/readyz` answers 503 with them)."""
READY_WITHIN_S = 2.0
"""How long `/readyz` waits for its answer: past it, not ready (a database that takes longer
to answer `SELECT 1` would not answer a turn either)."""
READ_WITHIN_S = 5.0
"""How long a connection may go without a whole request: from its opening, or from its last
answer (a keep-alive connection's idle time). A scrape sends its request at once."""
MAX_CONNECTIONS = 32
"""The most connections served at once (Prometheus and a health check use one each; a few
scrapers more are plenty): one past it is closed as it is accepted, so that connections nobody
uses cannot take the file descriptors a turn needs. A burst may briefly pass it by the
listening socket's backlog, as many as are accepted before any is counted."""


@asynccontextmanager
async def serving_metrics(
    settings: Settings, exporter: Exporter, *, ready: Readiness
) -> AsyncIterator[str | None]:
    """Serve the endpoints on `TOMORI_METRICS_ADDR` while the block runs; yield their base
    URL (the port the system chose, for `:0`), or None and serve nothing if it is unset."""
    if settings.metrics_addr is None:
        yield None
        return
    host, port = split_address(settings.metrics_addr)
    asked: weakref.WeakSet[asyncio.BaseTransport] = weakref.WeakSet()
    runner = web.AppRunner(
        _app(exporter, ready, asked),
        access_log=None,
        handle_signals=False,
        keepalive_timeout=READ_WITHIN_S,  # between requests (and, from 3.14.5, before the first)
        logger=REQUESTS,
    )
    await runner.setup()
    assert runner.server is not None  # set up
    listening: asyncio.Server | None = None
    with strangers_told_once_a_minute():
        try:
            try:
                listening = await asyncio.get_running_loop().create_server(
                    _capped(runner.server, asked), host, port, backlog=MAX_CONNECTIONS
                )
            except OSError as error:  # the port taken, an address this machine does not have
                raise refused(
                    "TOMORI_METRICS_ADDR",
                    settings.metrics_addr,
                    f"it cannot be served on ({error})",
                ) from None
            bound = listening.sockets[0].getsockname()
            shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
            url = f"http://{shown}:{bound[1]}"
            log.info("serving /metrics, /healthz and /readyz at %s", url)
            yield url
        finally:
            if listening is not None:
                listening.close()
            await runner.cleanup()  # closes the connections left


def _capped(
    server: web.Server, asked: weakref.WeakSet[asyncio.BaseTransport]
) -> Callable[[], asyncio.BaseProtocol]:
    """`server`'s protocol factory, but a connection past `MAX_CONNECTIONS` is closed at once,
    and one that has not `asked` a whole request within `READ_WITHIN_S` is closed then (aiohttp
    bounds a connection's idle time between requests, but before its first one only from 3.14.5
    on)."""
    loop = asyncio.get_running_loop()

    def protocol() -> asyncio.BaseProtocol:
        if len(server.connections) < MAX_CONNECTIONS:
            handler = server()
            loop.call_later(READ_WITHIN_S, _close_unless_asked, handler, asked)
            return handler
        REFUSALS.warning(
            "closed a connection to the metrics port: %d are open, the most it serves; "
            "more in the next minute are closed without a word",
            MAX_CONNECTIONS,
        )
        return _Closed()

    return protocol


def _close_unless_asked(
    handler: web.RequestHandler, asked: weakref.WeakSet[asyncio.BaseTransport]
) -> None:
    transport = handler.transport
    if transport is not None and transport not in asked:
        transport.close()


class _Closed(asyncio.Protocol):
    """A connection closed as soon as it is made."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


def _app(
    exporter: Exporter, ready: Readiness, asked: weakref.WeakSet[asyncio.BaseTransport]
) -> web.Application:
    """The endpoints; the connection of each request they are asked is noted in `asked`."""

    @web.middleware
    async def noted(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.transport is not None:
            asked.add(request.transport)
        return await handler(request)

    async def metrics(request: web.Request) -> web.Response:
        page = await exporter.scrape()
        return web.Response(body=page.body, headers={"Content-Type": page.content_type})

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        try:
            async with asyncio.timeout(READY_WITHIN_S):
                why_not = await ready()
        except TimeoutError:
            why_not = f"no answer within {READY_WITHIN_S:g} s"
        except Exception as error:
            log.info("/readyz could not judge readiness: %r", error)
            why_not = f"readiness unknown ({type(error).__name__})"
        if why_not is None:
            return web.Response(text="ready\n")
        return web.Response(status=503, text=f"not ready: {why_not}\n")

    app = web.Application(middlewares=[noted])
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


async def database_answers(database: Database) -> str | None:
    """None if `database` answers a cheap query now; else why not, by its error's kind."""
    try:
        await database.fetchall("SELECT 1")
    except Exception as error:
        if not database.is_database_error(error):
            raise
        return f"the database does not answer ({type(error).__name__})"
    return None
