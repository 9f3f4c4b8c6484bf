"""Tools the model may call: a name, a JSON schema for the arguments, an async function.

Bot authors add their own with the cog's `register_tool`. A tool returns a JSON object (what
the model reads) or raises; either way the tool loop reports back to the model and goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tomori.config.parsers import ConfigError
from tomori.config.settings import CURRENT_TIME_NAME
from tomori.errors import TomoriError
from tomori.providers.base import Image, JsonObject, ToolSpec
from tomori.tools.confirmation import Confirmation


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Where the call comes from, for tools that act on the channel or the user."""

    channel_id: str
    requester_id: str | None


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool may return instead of a bare JSON object: the object and images, which a
    model that sees images is sent after it (and one that does not is told of)."""

    result: JsonObject
    images: tuple[Image, ...] = ()


ToolFunction = Callable[
    [ToolContext, Mapping[str, Any]], Coroutine[Any, Any, JsonObject | ToolOutput]
]


class ToolFailure(TomoriError):
    """Raised by a tool to tell the model, in plain words, why it could not do the job."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: JsonObject
    run: ToolFunction
    mcp_server: str | None = None
    """The MCP server it comes from (an admin turns a server's tools off at once); None for
    the built-in tools and those a bot registers."""
    confirmation: Confirmation | None = None
    """Set: each call runs only once the member the turn answers confirms it."""

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)


class ToolRegistry:
    """The tools offered to the model: the built-in ones it is built with, then those a bot
    author registers. A bot's tool registered again under its name replaces the earlier one
    (a bot registering its tools after every load, or a reloaded module's newer code); a
    built-in tool's name is refused."""

    def __init__(self, builtin: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in builtin:
            self._check_name(tool.name)
            self._tools[tool.name] = tool
        self._builtin = frozenset(self._tools)

    def register(self, tool: Tool) -> None:
        self._check_name(tool.name)
        if tool.name in self._builtin:
            raise ConfigError(f"{tool.name!r} is the name of a built-in tool: choose another")
        self._tools[tool.name] = tool

    @staticmethod
    def _check_name(name: str) -> None:
        if not name.replace("_", "").replace("-", "").isalnum() or len(name) > 64:
            raise ConfigError(f"tool name {name!r}: use letters, digits, _ or -, at most 64")

    def for_turn(self, extra: Iterable[Tool], offered: Callable[[Tool], bool]) -> ToolRegistry:
        """This registry's tools and `extra` (an MCP server's, named apart already), those
        `offered` allows: what one turn's model is offered."""
        turn = ToolRegistry()
        turn._tools = {tool.name: tool for tool in (*self._tools.values(), *extra) if offered(tool)}
        turn._builtin = self._builtin & turn._tools.keys()
        return turn

    def with_bound(self, bound: Iterable[Tool], names: Collection[str]) -> ToolRegistry:
        """This registry with its tools named in `names` (built in, but bound to a turn's
        place: the memory tools) replaced by those of `bound`, and left out where `bound` has
        none of that name."""
        by_name = {tool.name: tool for tool in bound}
        turn = ToolRegistry()
        turn._tools = {
            name: by_name.get(name, tool)
            for name, tool in self._tools.items()
            if name not in names or name in by_name
        }
        turn._builtin = self._builtin & turn._tools.keys()
        return turn

    def all(self) -> tuple[Tool, ...]:
        return tuple(self._tools.values())

    def is_builtin(self, name: str) -> bool:
        return name in self._builtin

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self._tools.values())


async def _current_time(context: ToolContext, arguments: Mapping[str, Any]) -> JsonObject:
    name = str(arguments.get("timezone") or "UTC")
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolFailure(
            f"unknown timezone {name!r}; use an IANA name such as Europe/Paris"
        ) from None
    now = datetime.now(zone)
    return {
        "timezone": name,
        "iso": now.isoformat(timespec="seconds"),
        "weekday": now.strftime("%A"),
    }


CURRENT_TIME = Tool(
    name=CURRENT_TIME_NAME,
    description="The current date and time, in a timezone (an IANA name; UTC if not given).",
    parameters={
        "type": "object",
        "properties": {"timezone": {"type": "string", "description": "e.g. Asia/Tokyo"}},
    },
    run=_current_time,
)
