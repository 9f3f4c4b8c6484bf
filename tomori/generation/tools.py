"""Tools the model may call: a name, a JSON schema for the arguments, an async function.

Bot authors add their own with the cog's `register_tool`. A tool returns a JSON object (what
the model reads) or raises; either way the tool loop reports back to the model and goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tomori.config.settings import CURRENT_TIME_NAME
from tomori.errors import TomoriError
from tomori.providers.base import JsonObject, ToolSpec


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Where the call comes from, for tools that act on the channel or the user."""

    channel_id: str
    requester_id: str | None


ToolFunction = Callable[[ToolContext, Mapping[str, Any]], Coroutine[Any, Any, JsonObject]]


class ToolFailure(TomoriError):
    """Raised by a tool to tell the model, in plain words, why it could not do the job."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: JsonObject
    run: ToolFunction

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if not tool.name.replace("_", "").replace("-", "").isalnum() or len(tool.name) > 64:
            raise ValueError(f"tool name {tool.name!r}: use letters, digits, _ or -, at most 64")
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

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
