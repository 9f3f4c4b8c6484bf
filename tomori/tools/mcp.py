"""Tools from MCP servers, as the model sees them and under the contract every tool call keeps.

`McpTools` holds every server of `TOMORI_MCP_CONFIG` (each an `McpServer`, which owns its
connection) and offers their tools. A call runs in the turn's own task: `until_stopped` bounds
it by `TOOL_EXECUTION_TIMEOUT_MS` and cancels it on /kill.

The model sees a tool as `server__tool` (`exposed_name`), within what both providers allow of a
function name: OpenAI's `[a-zA-Z0-9_-]{1,64}`, Gemini's first character a letter or `_` and
at most 63 in some of its documentation. A character outside that is `_`; a name changed that
way, or cut to 63, or whose server's name would make the separator ambiguous, ends in a short
hash of the server's and tool's own names, so two tools never share one (should two hashes
meet, the second tool is left out, logged). What a tool returns reaches the model bounded
(`TOMORI_MCP_RESULT_MAX_CHARS`): text kept, images (up to `TOMORI_MAX_IMAGE_BYTES` each) sent
to a model that sees images, anything else named.
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
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tomori.config.mcp_servers import VARIABLE, McpAccess, McpServerConfig, load_servers
from tomori.config.parsers import ConfigError
from tomori.config.settings import Settings, seconds
from tomori.providers.base import Image, JsonObject
from tomori.tools.confirmation import Confirmation
from tomori.tools.log_redaction import LogRedaction, secrets_of
from tomori.tools.mcp_server import (
    ERROR_CHARS,
    STOPPED,
    McpServer,
    ServerState,
)
from tomori.tools.registry import Tool, ToolContext, ToolFailure, ToolOutput

if TYPE_CHECKING:
    from mcp import types as mcp_types

log = logging.getLogger(__name__)

MAX_NAME = 63
"""OpenAI allows 64 characters; Gemini's documentation says 64 in places and 63 in others."""
SEPARATOR = "__"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_ALLOWED = re.compile(r"^[A-Za-z0-9_-]+$")
_PLAIN_SERVER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*(_[A-Za-z0-9-]+)*$")


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
        self._redaction = LogRedaction(secrets_of(server.config for server in self.servers))

    def start(self) -> None:
        self._redaction.install()
        for server in self.servers:
            server.start()

    async def aclose(self) -> None:
        try:
            await asyncio.gather(*(server.aclose() for server in self.servers))
        finally:
            self._redaction.remove()

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
        """Each server's name and state in words, as an admin is shown them: ready, starting,
        down (why, without the author's paths or arguments: `Failure.shown`)."""
        return tuple(
            (s.name, f"down ({(s.failure or STOPPED).shown})")
            if s.state is ServerState.DOWN
            else (s.name, s.state.value)
            for s in self.servers
        )

    def tools(self, taken: Iterable[str] = (), guild_id: str | None = "") -> tuple[Tool, ...]:
        """Every server's tools as last listed, under their exposed names, that its author
        offers (`McpAccess`): in server `guild_id` (None: a direct message; "" : anywhere),
        of those it names; one with side effects carries a `Confirmation`. One whose name is
        `taken` (a built-in or registered tool's) or already given is left out, logged."""
        used = set(taken)
        found: list[Tool] = []
        for server in self.servers:
            access = server.config.access
            if guild_id != "" and not access.admits(guild_id):
                continue
            for listed in server.tools:
                if access.tools is not None and listed.name not in access.tools:
                    continue
                name = exposed_name(server.name, listed.name)
                if name in used:
                    log.warning(
                        "MCP tool %s of %s: its name %s is taken", listed.name, server.name, name
                    )
                    continue
                used.add(name)
                found.append(self._tool(server, listed, name))
        return tuple(found)

    def sorted_out(self, server: McpServer) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """`server`'s tools as last listed that its author's access offers, each that needs
        confirming marked with why, and the names of those it leaves out (for `--check`)."""
        access = server.config.access
        offered: list[str] = []
        withheld: list[str] = []
        for listed in server.tools:
            if access.tools is not None and listed.name not in access.tools:
                withheld.append(listed.name)
                continue
            why = _why_confirmed(access, listed)
            offered.append(f"{listed.name} (each call confirmed: {why})" if why else listed.name)
        return tuple(offered), tuple(withheld)

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
        access = server.config.access
        confirmation = Confirmation(access.roles) if _why_confirmed(access, listed) else None
        return Tool(name, description, schema, run, server.name, confirmation)


def _why_confirmed(access: McpAccess, listed: mcp_types.Tool) -> str:
    """Why each call of `listed` needs its asker's yes ("": it needs none): the author's
    `confirm` list names it, or its server does not mark it read-only (MCP's hints are the
    server's word; a server that says nothing is taken to change things)."""
    if listed.name in access.confirm:
        return "its entry names it in confirm"
    hints = listed.annotations
    if hints is None or not hints.read_only_hint:
        return "its server does not mark it read-only"
    if hints.destructive_hint:
        return "its server marks it destructive"
    return ""


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
