"""`tomori --check`: what would go wrong, found before any Discord user finds it.

The settings were read already (a bad one stops the command with exit code 2). Here the MCP
servers start while the database is opened and migrated, then every model of the chain is asked
for a tiny streamed answer at once (`probe`), offered every tool a turn may offer (the built-in
ones and the servers'), and one line per model says how it went, with the context budget its
requests are fitted to, then the channel summaries and the memories in force, then one per MCP
server. A front-end may add a check of its own (the `tomori` command logs in to Discord when a
token is set). Exit code 0 when everything answered, 1 otherwise, 2 when the database cannot be
used.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TextIO

from tomori.config.models import ModelChain
from tomori.config.settings import ConfigError, Settings
from tomori.console.probe import probe
from tomori.generation.contexts import ContextBook, served_elsewhere
from tomori.policy.notes import memories_in_force, summaries_in_force
from tomori.providers.base import ToolSpec
from tomori.providers.errors import sanitised
from tomori.store import StoreError
from tomori.store.connect import open_database
from tomori.tools.mcp import McpTools, mcp_tools_for
from tomori.tools.mcp_server import START_TIMEOUT_S, ServerState

NOTED_WAIT_S = 10.0
"""A first-token budget past which the wait is said before it starts."""

ExtraCheck = Callable[[TextIO], Awaitable[bool]]
"""Prints its own lines; True when what it checks is fine."""


async def run_check(
    settings: Settings,
    chain: ModelChain,
    out: TextIO,
    extra: ExtraCheck | None = None,
    *,
    unread: Sequence[str] = (),
    warnings: Sequence[str] = (),
    builtin: Sequence[ToolSpec] = (),
) -> int:
    """Print the report; `unread` says of each variable set that nothing reads (a misspelling,
    which fails the check: the setting it meant is not in force), `warnings` what may be meant
    but is worth a look (the check still passes); `builtin` are the front-end's built-in tools
    `TOMORI_TOOLS` names (the cog's read Discord: the core does not know them)."""
    failed = tuple(unread)
    try:
        mcp = mcp_tools_for(settings, os.environ)
    except ConfigError as error:  # the SDK not installed: said among the settings' lines
        failed, mcp = (*failed, str(error)), None
    if mcp is not None:
        mcp.start()  # while the database is opened
    try:
        return await _run_check(settings, chain, out, extra, failed, warnings, builtin, mcp)
    finally:
        if mcp is not None:
            await mcp.aclose()


async def _run_check(
    settings: Settings,
    chain: ModelChain,
    out: TextIO,
    extra: ExtraCheck | None,
    failed: Sequence[str],
    warnings: Sequence[str],
    builtin: Sequence[ToolSpec],
    mcp: McpTools | None,
) -> int:
    models = "1 model" if len(chain.entries) == 1 else f"{len(chain.entries)} models"
    print(f"ok      settings ({models}: {chain.described})", file=out)
    for line in failed:
        print(f"FAILED  {line}", file=out)
    for line in (*_budget_warnings(settings), *warnings):
        print(f"warning {line}", file=out)
    url = settings.db_url
    engine = (
        f"SQLite at {settings.db_path}"
        if url is None
        else f"PostgreSQL at {url.host}{'' if url.port is None else f':{url.port}'}/"
        f"{url.database} (TOMORI_DB_URL)"
    )
    try:
        database = await open_database(settings)
    except StoreError as error:
        print(f"FAILED  database: {error}", file=out)
        return 2
    await database.close()
    print(f"ok      database: {engine}, opened and migrated", file=out)
    print(f"ok      ceilings: {ceilings(settings, chain)}", file=out)
    out.flush()
    waits = settings.first_token_budget_s
    if waits >= NOTED_WAIT_S:  # lines come in the chain's order: say why one may be long
        print(
            f"asking {models} at once; one that never answers is waited for up to {waits:g} s "
            f"({settings.first_token_budget_source})",
            file=sys.stderr,
            flush=True,
        )
    tools = (*builtin, *await _offered(mcp, builtin))
    providers = chain.build_providers()
    try:
        results = await asyncio.gather(
            *(
                probe(
                    entry,
                    providers[entry.provider],
                    settings,
                    _where(chain, entry.provider),
                    tools,
                )
                for entry in chain.entries
            )
        )  # a probe raises nothing: whatever its pass raised is its line
    finally:
        for provider in providers.values():
            await provider.aclose()
    contexts = ContextBook(settings, served_elsewhere(chain, os.environ), chain.entries)
    for entry, result in zip(chain.entries, results, strict=True):
        print(result.line, file=out)
        print(f"        context: {contexts.budget(entry).described}", file=out)
    summaries, doubtful = summaries_in_force(settings, chain)
    print(f"{'warning' if doubtful else 'ok     '} summaries: {summaries}", file=out)
    print(f"ok      memories: {memories_in_force(settings)}", file=out)
    out.flush()
    fine = all(result.answered for result in results) and not failed
    fine = _check_mcp(mcp, out) and fine
    if extra is not None:
        fine = await extra(out) and fine
    out.flush()
    return 0 if fine else 1


async def _offered(mcp: McpTools | None, builtin: Sequence[ToolSpec]) -> tuple[ToolSpec, ...]:
    """Once the MCP servers started (or failed to): the tools they offer somewhere, as a turn
    offers them beside the built-in ones."""
    if mcp is None:
        return ()
    await mcp.started(START_TIMEOUT_S)
    somewhere = {s.name for s in mcp.servers if s.config.access.guilds or s.config.access.dms}
    listed = mcp.tools(tool.name for tool in builtin)
    return tuple(tool.spec for tool in listed if tool.mcp_server in somewhere)


def _check_mcp(tools: McpTools | None, out: TextIO) -> bool:
    """Each MCP server of `TOMORI_MCP_CONFIG`, started by now: a line of its tools, or of what
    failed. True when every one answered (or none is configured)."""
    if tools is None:
        return True
    fine = True
    for server in tools.servers:
        if server.state is ServerState.READY:
            offered, withheld = tools.sorted_out(server)
            where = server.config.access.described()
            names = ", ".join(offered) or "none"
            print(
                f"ok      MCP server {server.name}: {len(offered)} tools offered in "
                f"{where}: {names}",
                file=out,
            )
            if withheld:
                left_out = ", ".join(withheld)
                print(f"        not offered (its entry leaves them out): {left_out}", file=out)
        else:  # why its first start failed: it may be starting again by now
            why = server.last_failure or f"not ready within {START_TIMEOUT_S:g} s"
            said = "; its last lines on stderr:" if server.last_words else ""
            print(f"FAILED  MCP server {server.name}: {why}{said}", file=out)
            for line in server.last_words:
                print(f"        {line}", file=out)
            fine = False
    return fine


def ceilings(settings: Settings, chain: ModelChain) -> str:
    """What no server's admins can lift, in one line (docs/trust.md's table, as in force)."""
    own = {entry.label: entry.vision for entry in chain.entries}
    cooldown = settings.user_cooldown_ms
    per_member = settings.user_daily_tokens
    per_server = settings.server_daily_tokens
    return "; ".join(
        (
            f"models a server may choose: {chain.allowed.described(own)}",
            f"cooldown per member {cooldown / 1000:g} s at least" if cooldown else "no cooldown",
            f"{per_member} tokens a day per member at most" if per_member else "no member limit",
            f"{per_server} tokens a day per server" if per_server else "no server budget",
            f"{settings.queue_per_member} messages waiting per member and channel",
            f"/kill: {settings.kill_policy.value}",
        )
    )


def _budget_warnings(settings: Settings) -> list[str]:
    """A first-token wait the idle budget overrides, said with the variable that is in force."""
    if settings.stream_first_token_timeout_ms >= settings.stream_sdk_call_timeout_ms:
        return []
    return [
        f"STREAM_FIRST_TOKEN_TIMEOUT_MS={settings.stream_first_token_timeout_ms} is below "
        f"STREAM_SDK_CALL_TIMEOUT_MS={settings.stream_sdk_call_timeout_ms}: the first token is "
        f"waited for {settings.first_token_budget_s:g} s, the idle budget"
    ]


def _where(chain: ModelChain, provider: str) -> str | None:
    """The provider's base URL as the operator set it, without any user:password part."""
    url = chain.credentials[provider].base_url
    return None if url is None else sanitised(url)
