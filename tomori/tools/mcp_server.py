"""One MCP server's connection, owned by one task: started, listed, watched, restarted.

`McpServer` runs a server of `TOMORI_MCP_CONFIG` (a process on stdio, or a Streamable HTTP
session): one task owns the connection, lists the server's tools, lists them again when the
server says they changed, and starts it again when it crashed or stopped answering, after a
backoff that grows with each failed start. A call runs in the turn's own task; cancelling it
makes the SDK send MCP's `notifications/cancelled`, and then the owner pings the server,
restarting one that does not answer. A server that is down or starting fails a call at once
with a plain reason, so it never holds a turn past its tool budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from tomori.config.mcp_servers import McpServerConfig
from tomori.tools.registry import ToolFailure

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp import types as mcp_types

log = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0
"""The most a server's start (process or connection, handshake, tool list) may take."""
FIRST_WAIT_S = 10.0
"""The most a turn waits for a server's first start (once per process: a turn right after
start-up is offered its tools; /kill ends the wait)."""
PING_TIMEOUT_S = 5.0
"""After a call was cancelled or timed out: a server that does not answer a ping within this
is taken for hung and started again."""
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 60.0
ERROR_CHARS = 500
"""How much of a server's own error message the model is told."""


class ServerState(Enum):
    STARTING = "starting"
    READY = "ready"
    DOWN = "down"
    """It failed to start or stopped; it is started again once its backoff is over."""


class Failure(NamedTuple):
    """Why a server is down, twice: `said` in full for its author (the log and `--check`),
    `shown` for Discord (an admin's `/tomori tools`, the model): what failed, never an error's
    own words, which may name the author's command, its paths and its arguments."""

    said: str
    shown: str


STOPPED = Failure("it stopped", "it stopped")
UNANSWERED = Failure("it stopped answering", "it stopped answering")


class McpServer:
    """One configured server, its connection owned by one task (`start`, `aclose`)."""

    def __init__(self, config: McpServerConfig, *, call_timeout_s: float) -> None:
        self.config = config
        self._call_timeout_s = call_timeout_s
        self._start_timeout_s = START_TIMEOUT_S
        self.state = ServerState.STARTING
        self.failure: Failure | None = None
        """Why it is down (or why its last start failed, while it waits to start again)."""
        self.tools: tuple[mcp_types.Tool, ...] = ()
        """Its tools as last listed: kept while it restarts, so a call says why it fails."""
        self.tried = False
        """Whether a start has ended yet (ready or down): only the first is waited for by a
        turn (`McpTools.started`)."""
        self._session: ClientSession | None = None
        self._changed = asyncio.Event()
        """Set and replaced at each change of `state`, for calls waiting on a start."""
        self._wake = asyncio.Event()
        self._wanted: set[str] = set()
        """What the owner is asked to do: "relist", "check", "restart"."""
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._own(), name=f"tomori-mcp-{self.name}")

    async def aclose(self) -> None:
        """Stop the owner, which closes the session and the process in its own `finally`."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def ready(self) -> bool:
        """Wait while it starts; whether it is ready (False: it is down)."""
        while self.state is ServerState.STARTING:
            await self._changed.wait()
        return self.state is ServerState.READY

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> mcp_types.CallToolResult:
        """Call `tool`; `ToolFailure` says why it could not be done."""
        import mcp

        if not await self.ready() or self._session is None:
            why = (self.failure or STOPPED).shown
            raise ToolFailure(f"the MCP server {self.name!r} is not available now ({why})")
        session = self._session
        try:
            return await session.call_tool(
                tool, dict(arguments), read_timeout_seconds=self._call_timeout_s
            )
        except asyncio.CancelledError:
            self._ask("check")  # cancelled (/kill, the timeout): is the server still there?
            raise
        except mcp.MCPError as error:
            if error.code == mcp.types.CONNECTION_CLOSED:
                self._ask("restart")
                raise ToolFailure(
                    f"the MCP server {self.name!r} stopped during the call; it is being restarted"
                ) from None
            said = error.error.message[:ERROR_CHARS]
            raise ToolFailure(f"the MCP server {self.name!r} refused the call: {said}") from None
        except (OSError, ConnectionError) as error:
            self._ask("restart")
            raise ToolFailure(
                f"the MCP server {self.name!r} could not be reached ({type(error).__name__})"
            ) from None
        except Exception as error:  # the transport's own (an HTTP client's, a closed stream)
            if _is_closed_stream(error):
                self._ask("restart")
                raise ToolFailure(
                    f"the MCP server {self.name!r} stopped during the call; it is being restarted"
                ) from None
            self._ask("check")  # a ping decides whether the server is still there
            raise ToolFailure(
                f"the call to the MCP server {self.name!r} failed ({type(error).__name__})"
            ) from None

    def _described(self, error: BaseException) -> str:
        """`_described`, with the config's secrets taken out: a header's or an environment
        value, the URL's query and password (an HTTP error names the URL it was for)."""
        said = _described(error)
        config = self.config
        if config.url is not None:
            parts = urlsplit(config.url)
            shown = f"{parts.scheme}://{parts.hostname or ''}{parts.path}"
            said = said.replace(config.url, shown)
        for secret in (*config.headers.values(), *config.env.values(), *config.filled):
            if len(secret) >= 4:
                said = said.replace(secret, "…")
        return said

    def _ask(self, what: str) -> None:
        self._wanted.add(what)
        self._wake.set()
        if what == "restart" and self.state is ServerState.READY:
            self._session = None  # the next call waits for the new session, not this one
            self._set_state(ServerState.STARTING)

    def _set_state(self, state: ServerState, failure: Failure | None = None) -> None:
        self.state, self.failure = state, failure
        self.tried = self.tried or state is not ServerState.STARTING
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _own(self) -> None:
        """Start, serve, restart: until cancelled by `aclose`."""
        failed_starts = 0
        while True:
            self._set_state(ServerState.STARTING)
            served = False
            try:
                async with self._connected() as session:
                    self.tools = await self._list(session)
                    self._session, served = session, True
                    failed_starts = 0
                    self._set_state(ServerState.READY)
                    log.info("MCP server %s ready with %d tools", self.name, len(self.tools))
                    await self._serve(session)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self.failure = Failure(self._described(error), _kind(error))
                log.warning("MCP server %s failed: %s", self.name, self.failure.said)
            finally:
                self._session = None
            failed_starts += 0 if served else 1
            delay = _backoff(failed_starts)
            log.info("MCP server %s: starting again in %.1fs", self.name, delay)
            if delay > 0:  # a call meanwhile fails at once, saying why
                self._set_state(ServerState.DOWN, self.failure or STOPPED)
                await asyncio.sleep(delay)
            self.failure = None

    async def _serve(self, session: ClientSession) -> None:
        """Until the server must be started again: relist on its word, ping when asked."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            wanted, self._wanted = self._wanted, set()
            if "restart" in wanted:
                self.failure = UNANSWERED
                return
            if "relist" in wanted:
                self.tools = await self._list(session)
                log.info("MCP server %s: its tools changed (%d now)", self.name, len(self.tools))
            if "check" in wanted:
                try:
                    await asyncio.wait_for(session.send_ping(), PING_TIMEOUT_S)
                except Exception as error:
                    self.failure = Failure(
                        f"it did not answer a ping ({self._described(error)})",
                        f"it did not answer a ping ({_kind(error)})",
                    )
                    return

    async def _list(self, session: ClientSession) -> tuple[mcp_types.Tool, ...]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        import mcp

        while True:
            params = mcp.types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tuple(tools)

    @contextlib.asynccontextmanager
    async def _connected(self) -> AsyncIterator[ClientSession]:
        """A session, initialized, on the server's transport; closed on leaving."""
        import mcp
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async def on_message(message: Any) -> None:
            if isinstance(message, mcp.types.ToolListChangedNotification):
                self._ask("relist")

        config = self.config
        async with contextlib.AsyncExitStack() as stack:
            if config.command is not None:
                parameters = mcp.StdioServerParameters(
                    command=config.command, args=list(config.args), env=dict(config.env) or None
                )
                read, write = await stack.enter_async_context(mcp.stdio_client(parameters))
            else:
                assert config.url is not None
                client = await stack.enter_async_context(
                    create_mcp_http_client(headers=dict(config.headers))
                )
                read, write = await stack.enter_async_context(
                    streamable_http_client(config.url, http_client=client)
                )
            session = await stack.enter_async_context(
                mcp.ClientSession(
                    read,
                    write,
                    read_timeout_seconds=self._start_timeout_s,
                    message_handler=on_message,
                )
            )
            await session.initialize()
            yield session


def _backoff(failed_starts: int) -> float:
    """None after a server that served stopped (it starts again at once); then doubling."""
    if failed_starts == 0:
        return 0.0
    return float(min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (failed_starts - 1)))


def _is_closed_stream(error: BaseException) -> bool:
    import anyio

    return isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError)


def _kind(error: BaseException) -> str:
    """An error as Discord may be told it: the innermost's type, and the OS's reason in words
    (never the file, command or arguments its message names)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, OSError) and error.strerror:
        return f"{type(error).__name__}: {error.strerror}"
    return type(error).__name__


def _described(error: BaseException) -> str:
    """An error in a line: the innermost of a group, its type and its first words (an MCP
    server's error or the OS's; never arguments, which the server is not given here)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).splitlines()[0][:200] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
