"""`/tomori tools`: which tools a channel's model is offered, listed, or switched on or off.

An action like the rest of `tomori.policy.admin` (the cogs and the console run it through
`perform`); a name it does not know, or a name without on or off, is refused in one line.
"""

from __future__ import annotations

from collections.abc import Sequence

from tomori.delivery.notices import Notice, NoticeColour
from tomori.policy.admin import (
    Action,
    Administered,
    Where,
    cut_lines,
    done,
    keys,
    refused,
    scope_name,
    scope_of,
)
from tomori.tools.switches import SwitchTarget, ToolCatalog, ToolSwitch, offered
from tomori.words import said

SHOWN_TOOLS_CHARS = 3_800
"""How much of the tool list `tools` shows: an embed holds 4,096 characters."""


def tools(name: str | None = None, on: bool | None = None, scope: str = "channel") -> Action:
    """Without `name` and `on`: list the tools and whether each is offered here. With both:
    turn that tool, or every tool of that MCP server, on or off at `scope`; a name alone is
    refused saying what to add, never taken for a listing."""

    async def action(target: Administered, where: Where) -> Notice:
        catalog = target.tool_catalog(where.guild_id)
        if on is None and name:
            return refused(said("tools.offered_missing", name=name))
        if on is None:
            switches = await target.tool_switches.read(*keys(where))
            listed = _tool_list(catalog, switches)
            return Notice.of(said("title.tools_here"), listed, NoticeColour.SUCCESS)
        if not name:
            return refused(said("tools.name_missing"))
        servers = {server for server, _ in catalog.servers}
        kind = SwitchTarget.SERVER if name in servers else SwitchTarget.TOOL
        if kind is SwitchTarget.TOOL and name not in {tool.name for tool in catalog.tools}:
            return refused(said("tools.unknown", name=repr(name)))
        await target.tool_switches.set(*keys(where), ToolSwitch(scope_of(scope), kind, name, on))
        what = "server" if kind is SwitchTarget.SERVER else "tool"
        key = f"tools.{what}_{'on' if on else 'off'}"
        return done(said(key, name=name, where=scope_name(scope)))

    return action


def _tool_list(catalog: ToolCatalog, switches: Sequence[ToolSwitch]) -> str:
    lines = []
    for tool in catalog.tools:
        decided = offered(tool.name, tool.mcp_server, switches)
        state = "on" if decided is None or decided.enabled else "off"
        why = "" if decided is None else f", set for {decided.scope.value}"
        if decided is not None and decided.kind is SwitchTarget.SERVER:
            why += " by its MCP server"
        lines.append(f"{tool.name} ({tool.origin}): {state}{why}")
    if catalog.servers:
        lines.append("MCP servers: " + "; ".join(f"{n} {s}" for n, s in catalog.servers))
    return cut_lines(lines or ["No tools: the model answers without any."], SHOWN_TOOLS_CHARS)
