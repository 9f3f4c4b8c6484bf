"""`/tomori status`: how the models behaved in one server over the last day, from the metrics.

Counted from `turn_outcomes` (one row per model tried in a turn), `token_usage`, `tool_calls`
and `sprites_shown` (one row per message a persona posted wearing a sprite), all filed
under the server by the turn that wrote them; the window is measured on the database's clock,
which wrote them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from tomori.delivery.traffic import TrafficReport
from tomori.generation.health import Sick
from tomori.generation.results import STOPPED_FOR_FOLLOW_UP, StreamStatus
from tomori.store import Database

WINDOW_S = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class ServerStatus:
    turns: Counter[str] = field(default_factory=Counter)
    """Turns each model took part in, by provider:model."""
    stalls: Counter[str] = field(default_factory=Counter)
    """Timeouts by phase: first_token, idle."""
    fallbacks: int = 0
    """Turns a fallback model answered after an earlier one failed."""
    kills: int = 0
    """Turns /kill (or their user's stop word) stopped."""
    follow_ups: int = 0
    """Turns stopped because their user sent a follow-up."""
    errors: int = 0
    """Models' parts that ended in an error (the provider's, or the channel's)."""
    empty: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Tool calls by (tool, outcome): used, failed, timed_out, refused, killed."""
    sprites: Counter[str] = field(default_factory=Counter)
    """Messages posted wearing each sprite, by the name they showed: `Name (label)`."""


async def server_status(database: Database, guild_id: str) -> ServerStatus:
    """What the metrics hold for the server from the last `WINDOW_S`."""
    async with database.transaction() as tx:
        since = await tx.now() - WINDOW_S
        rows = await tx.fetchall(
            "SELECT model, outcome, phase, fallback, COUNT(*) AS n FROM turn_outcomes"
            " WHERE guild_id = ? AND recorded_at >= ? GROUP BY model, outcome, phase, fallback",
            (guild_id, since),
        )
        tokens = await tx.fetchone(
            "SELECT COALESCE(SUM(input_tokens), 0) AS tokens_in,"
            " COALESCE(SUM(output_tokens), 0) AS tokens_out FROM token_usage"
            " WHERE guild_id = ? AND recorded_at >= ?",
            (guild_id, since),
        )
        calls = await tx.fetchall(
            "SELECT tool, outcome, COUNT(*) AS n FROM tool_calls"
            " WHERE guild_id = ? AND recorded_at >= ? GROUP BY tool, outcome",
            (guild_id, since),
        )
        sprites = await tx.fetchall(
            "SELECT sprite, COUNT(*) AS n FROM sprites_shown"
            " WHERE guild_id = ? AND recorded_at >= ? GROUP BY sprite",
            (guild_id, since),
        )
    turns: Counter[str] = Counter()
    stalls: Counter[str] = Counter()
    by_outcome: Counter[str] = Counter()
    fallbacks = 0
    for row in rows:
        count = int(row["n"])
        if row["model"] is not None:
            turns[row["model"]] += count
        if row["outcome"] == StreamStatus.TIMEOUT:
            stalls[row["phase"] or "unknown"] += count
        by_outcome[row["outcome"]] += count
        fallbacks += count if row["fallback"] else 0
    return ServerStatus(
        turns=turns,
        stalls=stalls,
        fallbacks=fallbacks,
        kills=by_outcome[StreamStatus.STOPPED_BY_USER],
        follow_ups=by_outcome[STOPPED_FOR_FOLLOW_UP],
        errors=by_outcome[StreamStatus.ERROR],
        empty=by_outcome[StreamStatus.EMPTY_RESPONSE],
        input_tokens=int(tokens["tokens_in"]) if tokens is not None else 0,
        output_tokens=int(tokens["tokens_out"]) if tokens is not None else 0,
        tool_calls=Counter({(row["tool"], row["outcome"]): int(row["n"]) for row in calls}),
        sprites=Counter({row["sprite"]: int(row["n"]) for row in sprites}),
    )


def describe(
    status: ServerStatus, skipped: Sequence[Sick] = (), traffic: TrafficReport | None = None
) -> str:
    """The status as lines an admin reads; `skipped`: the models every turn skips right now
    (in every server: a model's health is the bot's), with why and since when; `traffic`: what
    this process's requests met at Discord (the bot's, not the server's)."""
    models = ", ".join(f"{model} {count}" for model, count in sorted(status.turns.items()))
    skipping = "; ".join(
        f"{sick.label} ({sick.ailment}, since <t:{math.floor(sick.since)}:R>)" for sick in skipped
    )
    return "\n".join(
        (
            f"Turns per model: {models or 'none'}",
            f"Stalls: first token {status.stalls['first_token']}, idle {status.stalls['idle']}",
            f"Fallbacks used: {status.fallbacks}",
            f"Stopped by /kill: {status.kills}; for a follow-up: {status.follow_ups}",
            f"Errors: {status.errors}; empty answers: {status.empty}",
            f"Tokens: {status.input_tokens} in, {status.output_tokens} out",
            f"Tool calls: {_tool_calls(status.tool_calls) or 'none'}",
            f"Sprites shown: {_sprites(status.sprites)}",
            f"Models skipped now: {skipping or 'none'}",
            *([traffic.line()] if traffic is not None else []),
        )
    )


def _sprites(sprites: Counter[str]) -> str:
    """`3 (Ann (happy) 2, Ann (sad) 1)`: the total, then each sprite, the most shown first
    (alphabetically among equals), ten at most."""
    if not sprites:
        return "none"
    ranked = sorted(sprites.items(), key=lambda item: (-item[1], item[0].casefold()))[:10]
    each = ", ".join(f"{sprite} {count}" for sprite, count in ranked)
    more = ", …" if len(sprites) > 10 else ""
    return f"{sprites.total()} ({each}{more})"


TOOL_ENDINGS = (
    ("failed", "failed"),
    ("timed_out", "timed out"),
    ("refused", "not confirmed"),
    ("killed", "killed"),
)


def _tool_calls(calls: Counter[tuple[str, str]]) -> str:
    """`name 5 (1 failed, 1 timed out)` per tool, the most called first."""
    by_tool: dict[str, Counter[str]] = {}
    for (tool, outcome), count in calls.items():
        by_tool.setdefault(tool, Counter())[outcome] += count
    shown = []
    for tool, outcomes in sorted(by_tool.items(), key=lambda item: (-item[1].total(), item[0])):
        endings = ", ".join(
            f"{outcomes[key]} {said}" for key, said in TOOL_ENDINGS if outcomes[key]
        )
        shown.append(f"{tool} {outcomes.total()}" + (f" ({endings})" if endings else ""))
    return "; ".join(shown)
