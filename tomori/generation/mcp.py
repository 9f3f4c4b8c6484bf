"""Tools from MCP servers, under the contract every tool call keeps.

Each server of `TOMORI_MCP_CONFIG` is one `McpServer`: one task owns its connection (a process
on stdio, or a Streamable HTTP session), lists its tools, lists them again when the server says
they changed, and starts it again when it crashed or stopped answering, after a backoff that
grows with each failed start. A call runs in the turn's own task (`until_stopped` bounds it by
`TOOL_EXECUTION_TIMEOUT_MS` and cancels it on /kill): cancelling it makes the SDK send the server
MCP's `notifications/cancelled`, and then the owner pings the server, restarting one that does
not answer. A server that is down or starting never blocks a turn past its tool budget: a call
fails at once with a plain reason while it waits out its backoff.

The model sees a tool as `server__tool` (`exposed_name`), within what both providers allow of a
function name: OpenAI's `[a-zA-Z0-9_-]{1,64}`, Gemini's first character a letter or `_` and
at most 63 in some of its documentation. A character outside that is `_`; a name changed that
way, or cut to 63, or whose server's name
would make the separator ambiguous, ends in a short hash of the server's and tool's own names,
so two tools never share one (should two hashes meet, the second tool is left out, logged).
What a tool returns reaches the model bounded (`TOMORI_MCP_RESULT_MAX_CHARS`): text kept,
images (up to `TOMORI_MAX_IMAGE_BYTES` each) sent to a model that sees images, anything else
named.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import importlib.util
import json
import logging
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tomori.config.mcp_servers import VARIABLE, McpServerConfig, load_servers
from tomori.config.parsers import ConfigError
from tomori.config.settings import Settings, seconds
from tomori.generation.tools import Tool, ToolContext, ToolFailure, ToolOutput
from tomori.providers.base import Image, JsonObject

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp import types as mcp_types

log = logging.getLogger(__name__)

MAX_NAME = 63
"""OpenAI allows 64 characters; Gemini's documentation says 64 in places and 63 in others."""
SEPARATOR = "__"
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

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_ALLOWED = re.compile(r"^[A-Za-z0-9_-]+$")
_PLAIN_SERVER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*(_[A-Za-z0-9-]+)*$")


class ServerState(Enum):
    STARTING = "starting"
    READY = "ready"
    DOWN = "down"
    """It failed to start or stopped; it is started again once its backoff is over."""


def exposed_name(server: str, tool: str) -> str:
    """The name the model calls `tool` of `server` by (see the module's docstring).

    `server__tool` as it is when that is allowed and says which server and tool it is: the
    server's name a letter first, no `_` at either end or doubled (so the first `__` is the
    separator), the whole within the characters and length allowed. Anything else is changed
    to fit and ends in a hash of both names."""
    plain = f"{server}{SEPARATOR}{tool}"
    if _PLAIN_SERVER.match(server) and _ALLOWED.match(tool) and len(plain) <= MAX_NAME:
        return plain
    name = _NOT_ALLOWED.sub("_", plain)
    if not (name[:1].isascii() and (name[:1].isalpha() or name[:1] == "_")):
        name = "_" + name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


class McpServer:
    """One configured server, its connection owned by one task (`start`, `aclose`)."""

    def __init__(self, config: McpServerConfig, *, call_timeout_s: float) -> None:
        self.config = config
        self._call_timeout_s = call_timeout_s
        self._start_timeout_s = START_TIMEOUT_S
        self.state = ServerState.STARTING
        self.failure = ""
        """Why it is down, in words the model and the log may read."""
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
            raise ToolFailure(f"the MCP server {self.name!r} is not available now ({self.failure})")
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
        for secret in (*config.headers.values(), *config.env.values()):
            if len(secret) >= 4:
                said = said.replace(secret, "…")
        return said

    def _ask(self, what: str) -> None:
        self._wanted.add(what)
        self._wake.set()
        if what == "restart" and self.state is ServerState.READY:
            self._session = None  # the next call waits for the new session, not this one
            self._set_state(ServerState.STARTING)

    def _set_state(self, state: ServerState, failure: str = "") -> None:
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
                reason = self._described(error)
                log.warning("MCP server %s failed: %s", self.name, reason)
                self.failure = reason
            finally:
                self._session = None
            failed_starts += 0 if served else 1
            delay = _backoff(failed_starts)
            log.info("MCP server %s: starting again in %.1fs", self.name, delay)
            if delay > 0:  # a call meanwhile fails at once, saying why
                self._set_state(ServerState.DOWN, self.failure or "it stopped")
                await asyncio.sleep(delay)
            self.failure = ""

    async def _serve(self, session: ClientSession) -> None:
        """Until the server must be started again: relist on its word, ping when asked."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            wanted, self._wanted = self._wanted, set()
            if "restart" in wanted:
                self.failure = "it stopped answering"
                return
            if "relist" in wanted:
                self.tools = await self._list(session)
                log.info("MCP server %s: its tools changed (%d now)", self.name, len(self.tools))
            if "check" in wanted:
                try:
                    await asyncio.wait_for(session.send_ping(), PING_TIMEOUT_S)
                except Exception as error:
                    self.failure = f"it did not answer a ping ({self._described(error)})"
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


def _described(error: BaseException) -> str:
    """An error in a line: the innermost of a group, its type and its first words (an MCP
    server's error or the OS's; never arguments, which the server is not given here)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).splitlines()[0][:200] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class McpTools:
    """Every configured server, and their tools as the model sees them."""

    def __init__(
        self,
        configs: Iterable[McpServerConfig],
        *,
        call_timeout_s: float,
        result_chars: int,
        image_bytes: int,
    ) -> None:
        self.servers = tuple(McpServer(c, call_timeout_s=call_timeout_s) for c in configs)
        self._result_chars = result_chars
        self._image_bytes = image_bytes

    def start(self) -> None:
        for server in self.servers:
            server.start()

    async def aclose(self) -> None:
        await asyncio.gather(*(server.aclose() for server in self.servers))

    async def started(self, timeout_s: float, *, first_only: bool = False) -> None:
        """Wait until every server is ready or down, at most `timeout_s`; `first_only`: only
        for those whose first start has not ended (a turn just after start-up would be offered
        none of their tools; one restarting keeps offering those it listed, and one that never
        started fails its calls at once)."""
        waits = [s.ready() for s in self.servers if not (first_only and s.tried)]
        if waits:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await asyncio.gather(*waits)

    def states(self) -> tuple[tuple[str, str], ...]:
        """Each server's name and state in words: ready, starting, down (why)."""
        return tuple(
            (s.name, f"down ({s.failure})" if s.state is ServerState.DOWN else s.state.value)
            for s in self.servers
        )

    def tools(self, taken: Iterable[str] = ()) -> tuple[Tool, ...]:
        """Every server's tools as last listed, under their exposed names; one whose name is
        `taken` (a built-in or registered tool's) or already given is left out, logged."""
        used = set(taken)
        found: list[Tool] = []
        for server in self.servers:
            for listed in server.tools:
                name = exposed_name(server.name, listed.name)
                if name in used:
                    log.warning(
                        "MCP tool %s of %s: its name %s is taken", listed.name, server.name, name
                    )
                    continue
                used.add(name)
                found.append(self._tool(server, listed, name))
        return tuple(found)

    def _tool(self, server: McpServer, listed: mcp_types.Tool, name: str) -> Tool:
        limit, image_bytes = self._result_chars, self._image_bytes

        async def run(context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutput:
            result = await server.call(listed.name, arguments)
            output = result_output(result, limit, image_bytes)
            if result.is_error:
                said = str(output.result["text"])[:ERROR_CHARS]
                raise ToolFailure(f"the tool reported an error: {said}")
            return output

        schema: JsonObject = dict(listed.input_schema) or {"type": "object"}
        description = (listed.description or listed.title or listed.name)[:1024]
        return Tool(name, description, schema, run, mcp_server=server.name)


def result_output(result: mcp_types.CallToolResult, limit: int, image_bytes: int) -> ToolOutput:
    """What the model reads of a result: its text (and its structured content when it gave no
    text), cut at `limit` characters with a marker; its images up to `image_bytes` each, which
    only a model that sees images is sent (`ToolOutput`); anything else named, not sent."""
    import mcp

    types = mcp.types
    texts: list[str] = []
    omitted: list[str] = []
    images: list[Image] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            texts.append(block.text)
        elif isinstance(block, types.ImageContent):
            image = _image(block, image_bytes)
            if image is None:
                size = f"{image_bytes} byte{'s' * (image_bytes != 1)}"
                omitted.append(f"an image ({block.mime_type}) larger than {size}")
            else:
                images.append(image)
        elif isinstance(block, types.AudioContent):
            omitted.append(f"audio ({block.mime_type})")
        elif isinstance(block, types.ResourceLink):
            texts.append(f"[resource {block.name}: {block.uri}]")
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                texts.append(resource.text)
            else:
                omitted.append(f"a file ({resource.mime_type or 'binary'}, {resource.uri})")
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(texts)
    if len(text) > limit:
        text = f"{text[:limit]}\n[cut: {len(text) - limit} more characters]"
    payload: dict[str, Any] = {"text": text}
    if omitted:
        payload["not_shown"] = omitted
    return ToolOutput(payload, tuple(images))


def _image(block: mcp_types.ImageContent, image_bytes: int) -> Image | None:
    """The image's bytes, or None past `image_bytes` (checked on the base64 text first, so a
    huge one is never decoded)."""
    if len(block.data) > (image_bytes // 3 + 1) * 4:  # more base64 than that many bytes make
        return None
    try:
        data = base64.b64decode(block.data, validate=True)
    except ValueError:
        return None
    return Image(data, block.mime_type) if len(data) <= image_bytes else None


def mcp_tools_for(settings: Settings, environ: Mapping[str, str]) -> McpTools | None:
    """The servers `TOMORI_MCP_CONFIG` names, not started; None when it is unset or names none.
    `ConfigError` for a bad file, or when the `mcp` extra is not installed."""
    if settings.mcp_config is None:
        return None
    configs = load_servers(settings.mcp_config, environ)
    if not configs:
        return None
    if importlib.util.find_spec("mcp") is None:
        raise ConfigError(
            f"{VARIABLE} names MCP servers, but the MCP SDK is not installed: "
            "pip install 'tomori-cog[mcp]'"
        )
    return McpTools(
        configs,
        call_timeout_s=seconds(settings.tool_execution_timeout_ms),
        result_chars=settings.mcp_result_max_chars,
        image_bytes=settings.max_image_bytes,
    )
