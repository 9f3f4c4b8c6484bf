"""`python bot.py --check`: what would go wrong, found before any Discord user finds it.

The settings were read already (a bad one stops `bot.py` with exit code 2). Here the database
is opened and migrated, then every model of the chain is asked for a tiny streamed answer at
once (`probe`), and one line per model says how it went. A front-end may add a check of its
own (bot.py logs in to Discord when a token is set). Exit code 0 when everything answered,
1 otherwise, 2 when the database cannot be used.
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
from tomori.providers.errors import sanitised
from tomori.store import StoreError
from tomori.store.connect import open_database
from tomori.tools.mcp import mcp_tools_for
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
) -> int:
    """Print the report; `unread` says of each variable set that nothing reads (a misspelling,
    which fails the check: the setting it meant is not in force), `warnings` what may be meant
    but is worth a look (the check still passes)."""
    models = "1 model" if len(chain.entries) == 1 else f"{len(chain.entries)} models"
    print(f"ok      settings ({models}: {chain.described})", file=out)
    for line in unread:
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
    providers = chain.build_providers()
    try:
        results = await asyncio.gather(
            *(
                probe(entry, providers[entry.provider], settings, _where(chain, entry.provider))
                for entry in chain.entries
            )
        )  # a probe raises nothing: whatever its pass raised is its line
    finally:
        for provider in providers.values():
            await provider.aclose()
    for result in results:
        print(result.line, file=out)
    out.flush()
    fine = all(result.answered for result in results) and not unread
    fine = await _check_mcp(settings, out) and fine
    if extra is not None:
        fine = await extra(out) and fine
    out.flush()
    return 0 if fine else 1


async def _check_mcp(settings: Settings, out: TextIO) -> bool:
    """Start or reach each MCP server of `TOMORI_MCP_CONFIG`: a line of its tools, or of what
    failed. True when every one answered (or none is configured)."""
    try:
        tools = mcp_tools_for(settings, os.environ)
    except ConfigError as error:
        print(f"FAILED  {error}", file=out)
        return False
    if tools is None:
        return True
    tools.start()
    try:
        await tools.started(START_TIMEOUT_S)
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
            else:
                failed = server.failure  # in full: only the author runs --check
                why = failed.said if failed else f"not ready within {START_TIMEOUT_S:g} s"
                print(f"FAILED  MCP server {server.name}: {why}", file=out)
                fine = False
        return fine
    finally:
        await tools.aclose()


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
