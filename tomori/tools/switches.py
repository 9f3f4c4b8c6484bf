"""Which tools the model is offered in a channel: what admins turned off or on, written once.

An admin turns a tool (by the name the model calls it) or every tool of one MCP server off or
on, for a channel or for the whole server (`/tomori tools`). The most specific choice wins: a
channel's beats its server's, and at one scope a tool's own beats its MCP server's; nothing set
is on. `offered` is the rule; `ToolSwitchStore` keeps the choices in `tool_switches` (migration
0011), read afresh by each turn, so a change through any process applies from the next turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from tomori.config.scope import Scope
from tomori.store import Database
from tomori.tools.mcp import McpTools
from tomori.tools.mcp_server import FIRST_WAIT_S
from tomori.tools.registry import Tool, ToolRegistry

SERVER_WIDE = ""
"""The `channel_id` of a choice made for the whole server."""


class SwitchTarget(StrEnum):
    TOOL = "tool"
    SERVER = "server"
    """Every tool of one MCP server."""


@dataclass(frozen=True, slots=True)
class ToolSwitch:
    scope: Scope
    kind: SwitchTarget
    name: str
    enabled: bool


def offered(tool: str, mcp_server: str | None, switches: Iterable[ToolSwitch]) -> ToolSwitch | None:
    """The choice that decides whether `tool` (of `mcp_server`, if one) is offered, or None:
    none was made, and it is."""
    by_key = {(s.scope, s.kind, s.name): s for s in switches}
    candidates = [(Scope.CHANNEL, SwitchTarget.TOOL, tool)]
    if mcp_server is not None:
        candidates.append((Scope.CHANNEL, SwitchTarget.SERVER, mcp_server))
    candidates.append((Scope.SERVER, SwitchTarget.TOOL, tool))
    if mcp_server is not None:
        candidates.append((Scope.SERVER, SwitchTarget.SERVER, mcp_server))
    for key in candidates:
        if key in by_key:
            return by_key[key]
    return None


class ToolSwitchStore:
    def __init__(self, database: Database) -> None:
        self._db = database

    async def read(self, guild_id: str, channel_id: str) -> tuple[ToolSwitch, ...]:
        """The choices that hold in the channel: its own and its server's."""
        rows = await self._db.fetchall(
            "SELECT channel_id, kind, name, enabled FROM tool_switches"
            " WHERE guild_id = ? AND channel_id IN (?, ?)",
            (guild_id, channel_id, SERVER_WIDE),
        )
        return tuple(
            ToolSwitch(
                Scope.SERVER if row["channel_id"] == SERVER_WIDE else Scope.CHANNEL,
                SwitchTarget(row["kind"]),
                row["name"],
                bool(row["enabled"]),
            )
            for row in rows
        )

    async def set(self, guild_id: str, channel_id: str, switch: ToolSwitch) -> None:
        where = SERVER_WIDE if switch.scope is Scope.SERVER else channel_id
        async with self._db.transaction() as tx:
            now = await tx.now()
            await tx.execute(
                "INSERT INTO tool_switches (guild_id, channel_id, kind, name, enabled, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (guild_id, channel_id, kind, name)"
                " DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at",
                (guild_id, where, switch.kind.value, switch.name, int(switch.enabled), now),
            )

    async def reset(self, scope: Scope, guild_id: str, channel_id: str) -> bool:
        """Clear every choice made at `scope` (`/tomori reset`); False if none was."""
        where = SERVER_WIDE if scope is Scope.SERVER else channel_id
        cleared = await self._db.execute(
            "DELETE FROM tool_switches WHERE guild_id = ? AND channel_id = ?", (guild_id, where)
        )
        return cleared > 0


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """A tool the bot has, as `/tomori tools` lists it."""

    name: str
    origin: str
    """"built-in", "registered" or "MCP server NAME"."""
    mcp_server: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCatalog:
    """Every tool the bot could offer now, and each MCP server's state ("ready", "starting",
    "down: why")."""

    tools: tuple[ToolEntry, ...] = ()
    servers: tuple[tuple[str, str], ...] = ()


class BotTools:
    """The bot's tools (built-in and registered) and its MCP servers', as a turn in one channel
    is offered them and `/tomori tools` lists them; the cog and the console each hold one."""

    def __init__(self, registry: ToolRegistry, mcp: McpTools | None) -> None:
        self.registry = registry
        self.mcp = mcp

    def _mcp_tools(self, guild_id: str | None) -> tuple[Tool, ...]:
        if self.mcp is None:
            return ()
        return self.mcp.tools((tool.name for tool in self.registry.all()), guild_id)

    async def for_turn(self, switches: Iterable[ToolSwitch], guild_id: str | None) -> ToolRegistry:
        """What a turn in server `guild_id` (None: a direct message) is offered: every tool
        offered there (an MCP server's only where its author allows), less those `switches`
        turn off. Waits for a server's first start (at most `FIRST_WAIT_S`, once; the caller
        runs it under `until_stopped`), so a turn just after start-up is offered its tools."""
        if self.mcp is not None:
            await self.mcp.started(FIRST_WAIT_S, first_only=True)
        held = tuple(switches)

        def on(tool: Tool) -> bool:
            decided = offered(tool.name, tool.mcp_server, held)
            return decided is None or decided.enabled

        return self.registry.for_turn(self._mcp_tools(guild_id), on)

    def catalog(self, guild_id: str) -> ToolCatalog:
        """Every tool the bot could offer now in server `guild_id`, and its MCP servers'
        states."""
        entries = [
            ToolEntry(
                tool.name, "built-in" if self.registry.is_builtin(tool.name) else "registered"
            )
            for tool in self.registry.all()
        ]
        entries += [
            ToolEntry(tool.name, f"MCP server {tool.mcp_server}", tool.mcp_server)
            for tool in self._mcp_tools(guild_id)
        ]
        return ToolCatalog(tuple(entries), () if self.mcp is None else self.mcp.states())
