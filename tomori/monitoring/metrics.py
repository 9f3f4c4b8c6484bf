"""Counters an operator reads to see how often each model stalls and each tool fails, the
tokens each turn used, which a quota can be built on, and how each model's part in each turn
ended, with the server it was in, which `/tomori status` sums for a server's admins.

`record`, `record_usage` and `record_outcome` are synchronous and cheap (they run inside a
turn); what they record reaches the database in batches from one task the `Metrics` owns,
which keeps writing until nothing is pending, so what is recorded while a batch is being
written goes out in the next batch rather than waiting for the next call. `flushed()` (and
`counts()`, and `close()`) wait for that task, so they see everything recorded before they
were called. Each count and each turn's usage is logged too. A batch the database refuses is
logged and dropped: the turn it came from is over, and holding rows back for a database that
may stay away would grow without bound. What an operator's monitoring reads of the same
(tokens, each model's part, MCP calls; never an id) goes to the `exporter` at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import astuple

from tomori.generation.results import TurnOutcome, TurnUsage
from tomori.monitoring.exporter import NO_EXPORT, Exporter
from tomori.store import Database
from tomori.store.outage import reported

log = logging.getLogger(__name__)


OUTCOMES_KEPT_S = 2 * 24 * 3600.0
"""Turn outcomes older than this are deleted as new ones are written: status shows a day."""


class Metrics:
    def __init__(self, database: Database, exporter: Exporter = NO_EXPORT) -> None:
        self._db = database
        self.exporter = exporter
        """Where the runtime's turns report what an operator's monitoring reads."""
        self._pending: Counter[tuple[str, str]] = Counter()
        self._usage: list[TurnUsage] = []
        self._outcomes: list[TurnOutcome] = []
        self._tool_calls: list[tuple[str | None, str, str]] = []
        self._sprites: list[tuple[str | None, str]] = []
        self._flush: asyncio.Task[None] | None = None

    def record(self, name: str, label: str) -> None:
        log.info("metric %s %s", name, label, extra={"metric": name, "label": label})
        self._pending[(name, label)] += 1
        self._start_flush()

    def record_usage(self, usage: TurnUsage) -> None:
        log.info(
            "usage in channel %s by %s: %s, %d tokens in, %d out",
            usage.channel_id,
            usage.requester_id,
            usage.model,
            usage.input_tokens,
            usage.output_tokens,
        )
        self._usage.append(usage)
        self.exporter.tokens_used(usage.model, usage.input_tokens, usage.output_tokens)
        self._start_flush()

    def record_tool_call(
        self, guild_id: str | None, tool: str, outcome: str, mcp_server: str | None = None
    ) -> None:
        """One tool call's ending (used, failed, timed_out, refused, killed), counted as
        `tool_<outcome>` by tool and filed under its server for `/tomori status`; never its
        arguments. A tool of an MCP server is exported by server, not by tool."""
        self.record(f"tool_{outcome}", tool)
        if mcp_server is not None:
            self.exporter.mcp_called(mcp_server, outcome)
        self._tool_calls.append((guild_id, tool, outcome))

    def record_sprites(self, guild_id: str | None, sprites: Sequence[str]) -> None:
        """The sprites one pass's messages wore (`StreamResult.sprites`), filed under their
        server for `/tomori status` (not among the bot's counters: their names are the
        servers' own, without bound)."""
        if not sprites:
            return
        log.info("sprites shown in server %s: %s", guild_id, ", ".join(sprites))
        self._sprites.extend((guild_id, sprite) for sprite in sprites)
        self._start_flush()

    def record_outcome(self, outcome: TurnOutcome) -> None:
        self._outcomes.append(outcome)
        if outcome.model is not None:
            self.exporter.model_ended(
                outcome.model, outcome.outcome, outcome.phase, outcome.fallback
            )
        self._start_flush()

    async def close(self) -> None:
        await self.flushed()

    async def counts(self) -> dict[tuple[str, str], int]:
        await self.flushed()
        rows = await self._db.fetchall("SELECT name, label, count FROM metrics")
        return {(row["name"], row["label"]): row["count"] for row in rows}

    async def flushed(self) -> None:
        """Return once everything recorded so far is written (or its batch was dropped)."""
        if self._flush is not None:
            # wait, not await: a reader cancelled while waiting must not cancel the writes
            await asyncio.wait({self._flush})

    def _start_flush(self) -> None:
        if self._flush is None or self._flush.done():
            self._flush = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending or self._usage or self._outcomes or self._tool_calls or self._sprites:
            await self._write()

    async def _write(self) -> None:
        pending, self._pending = self._pending, Counter()
        usage, self._usage = self._usage, []
        outcomes, self._outcomes = self._outcomes, []
        tool_calls, self._tool_calls = self._tool_calls, []
        sprites, self._sprites = self._sprites, []
        try:
            async with self._db.transaction() as tx:
                now = await tx.now()
                if pending:
                    await tx.executemany(
                        "INSERT INTO metrics (name, label, count, updated_at) VALUES (?, ?, ?, ?)"
                        " ON CONFLICT (name, label) DO UPDATE"
                        " SET count = metrics.count + excluded.count,"
                        " updated_at = excluded.updated_at",
                        [(name, label, count, now) for (name, label), count in pending.items()],
                    )
                if usage:
                    await tx.executemany(
                        "INSERT INTO token_usage (channel_id, requester_id, message_id, model,"
                        " input_tokens, output_tokens, guild_id, recorded_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [(*astuple(turn), now) for turn in usage],
                    )
                if outcomes:
                    await tx.executemany(
                        "INSERT INTO turn_outcomes (guild_id, channel_id, model, outcome, phase,"
                        " fallback, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [(*astuple(turn)[:-1], int(turn.fallback), now) for turn in outcomes],
                    )
                    await tx.execute(
                        "DELETE FROM turn_outcomes WHERE recorded_at < ?", (now - OUTCOMES_KEPT_S,)
                    )
                if tool_calls:
                    await tx.executemany(
                        "INSERT INTO tool_calls (guild_id, tool, outcome, recorded_at)"
                        " VALUES (?, ?, ?, ?)",
                        [(*call, now) for call in tool_calls],
                    )
                    await tx.execute(
                        "DELETE FROM tool_calls WHERE recorded_at < ?", (now - OUTCOMES_KEPT_S,)
                    )
                if sprites:
                    await tx.executemany(
                        "INSERT INTO sprites_shown (guild_id, sprite, recorded_at)"
                        " VALUES (?, ?, ?)",
                        [(*shown, now) for shown in sprites],
                    )
                    await tx.execute(
                        "DELETE FROM sprites_shown WHERE recorded_at < ?",
                        (now - OUTCOMES_KEPT_S,),
                    )
        except Exception as error:
            if not self._db.is_database_error(error):
                raise
            quiet = reported(error)  # the store logged the outage: no traceback again
            log.log(
                logging.INFO if quiet else logging.WARNING,
                "could not write %d metric counts, %d turns' usage, %d outcomes, %d tool calls"
                " and %d sprites shown",
                sum(pending.values()),
                len(usage),
                len(outcomes),
                len(tool_calls),
                len(sprites),
                exc_info=not quiet,
            )
