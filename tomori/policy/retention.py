"""How long the tables that grow with use keep their rows: each rule once, and the sweep that
keeps to them.

- `token_usage`: a row goes `TOMORI_TOKEN_USAGE_DAYS` (2) after its turn. The daily limits
  count from 00:00 UTC and `/tomori status` a day back; an author billing from it keeps more.
- `user_limits`: once every time a row holds is a day old, and older than the longest cooldown
  (the author's, or any server's): no cooldown it holds can still run, and the notices it
  marks are for days gone.
- `persona_messages`: `PERSONA_MESSAGES_KEPT_S` (30 days) after the post. A reply to an older
  message of the bot's webhook finds its persona by the name the message shows.
- `model_health`: a mark at an endpoint this process asks, once no chain names its model (the
  environment's, a server's, a channel's, a persona's): a model nobody asks needs no probe,
  and one named again is asked afresh. A mark at an endpoint this process does not ask is
  another's (a process configured otherwise), or abandoned: it goes once its probe is
  `UNPROBED_KEPT_S` overdue, which a process asking the model there never lets happen.
- `message_fates`: a day (`why_book.KEPT_S`), and no more than `why_book.MAX_ROWS` rows, the
  newest kept: what "Why no answer?" tells of a message (`tomori.monitoring.why_book`).
- `answer_takes` and `answer_take_texts` (`tomori.turns.take_store`): an answer's takes
  (regenerate and swipe), `TAKES_FROZEN_KEPT_S` (a day) after the channel went on and froze
  them, so a late press of their buttons is told the conversation went on; or, still open (the
  last answer of a channel gone quiet), `TAKES_OPEN_KEPT_S` (30 days) after their last take or
  swipe, texts and all; a press after that is told they are no longer kept.
- `memories` (and their search entries): `TOMORI_MEMORY_DAYS` (365) after each was saved; 0
  keeps them until someone forgets them (`/memory`, `/tomori memory`, the model's `forget`).
  Swept whether or not memories are on now: turning them off keeps none longer.
- `channel_summaries` (and the `summary_sources` each keeps, `tomori.summary`): as long as
  memories, `TOMORI_MEMORY_DAYS` after each was last written; 0 keeps them until dropped.
  A channel's count of deletes (`summary_changes`) goes with them that long after its last;
  who asked to be forgotten (`summary_forgotten`) is kept always.
- `channel_webhooks`: not swept. Discord says when a channel, or the bot's place in a server,
  is gone, and the cog forgets its webhooks then (`tomori_cog.webhooks`).

Every process sweeps (`Retention`, opened with its runtime): once as it starts, then every
`SWEEP_INTERVAL_S`. Deleting is idempotent, so processes sweeping together only repeat each
other. Rows by age go oldest first, a slice of `SLICE_S` per transaction, so a first sweep
after an upgrade (a year of rows) never holds the database's write lock for long.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from tomori.config.settings import Settings, seconds
from tomori.locks.loops import BackgroundLoops
from tomori.memory.store import Bounds, MemoryStore
from tomori.monitoring import why_book
from tomori.policy.limits import DAY_S
from tomori.store import Database
from tomori.summary.store import SummaryStore

log = logging.getLogger(__name__)

PERSONA_MESSAGES_KEPT_S = 30 * DAY_S
SWEEP_INTERVAL_S = 3600.0
SLICE_S = 3600.0
"""Rows by age are deleted an hour of them per transaction."""
UNPROBED_KEPT_S = 3600.0
TAKES_FROZEN_KEPT_S = DAY_S
TAKES_OPEN_KEPT_S = 30 * DAY_S
FROZEN = "frozen"
"""A frozen answer's `answer_takes.state` (`tomori.turns.takes.TakeState.FROZEN`, a layer up)."""


class Chains(Protocol):
    """The models this process's turns may ask (`tomori.turns.ChannelConfig`)."""

    def models_named(self, stored: Iterable[str]) -> set[tuple[str, str]]:
        """(endpoint, provider:model) of every model a turn may ask, given the chains stored
        in the database."""
        ...

    def endpoint(self, provider: str) -> str:
        """Where this process asks the provider's models."""
        ...


@dataclass(frozen=True, slots=True)
class Swept:
    """How many rows one sweep deleted, by table."""

    token_usage: int = 0
    user_limits: int = 0
    persona_messages: int = 0
    model_health: int = 0
    message_fates: int = 0
    answer_takes: int = 0
    memories: int = 0
    summaries: int = 0

    @property
    def any(self) -> bool:
        return any(
            (
                self.token_usage,
                self.user_limits,
                self.persona_messages,
                self.model_health,
                self.message_fates,
                self.answer_takes,
                self.memories,
                self.summaries,
            )
        )


async def sweep(database: Database, settings: Settings, chains: Chains) -> Swept:
    """Delete what each rule (see the module docstring) no longer keeps."""
    return Swept(
        await _older_than(
            database, "token_usage", "recorded_at", settings.token_usage_days * DAY_S
        ),
        await _idle_limits(database, seconds(settings.user_cooldown_ms)),
        await _older_than(database, "persona_messages", "posted_at", PERSONA_MESSAGES_KEPT_S),
        await _unasked_models(database, chains),
        await why_book.sweep(database),
        await _answer_takes(database),
        await _memories(database, settings.memory_days),
        await _summaries(database, settings.memory_days),
    )


async def _older_than(database: Database, table: str, column: str, kept_s: float) -> int:
    """Delete the rows of `table` whose `column` is older than `kept_s`, a slice at a time."""
    deleted = 0
    while True:
        async with database.transaction() as tx:
            cutoff = await tx.now() - kept_s
            row = await tx.fetchone(f"SELECT MIN({column}) AS oldest FROM {table}")
            oldest = None if row is None else row["oldest"]
            if oldest is None or float(oldest) >= cutoff:
                return deleted
            upto = min(cutoff, float(oldest) + SLICE_S)
            deleted += await tx.execute(f"DELETE FROM {table} WHERE {column} < ?", (upto,))
        await asyncio.sleep(0)  # the work waiting for the database goes between two slices


async def _idle_limits(database: Database, author_cooldown_s: float) -> int:
    async with database.transaction() as tx:
        row = await tx.fetchone("SELECT MAX(cooldown_ms) AS longest FROM server_settings")
        longest_ms = 0 if row is None or row["longest"] is None else int(row["longest"])
        idle_since = await tx.now() - max(DAY_S, author_cooldown_s, longest_ms / 1000)
        return await tx.execute(
            "DELETE FROM user_limits WHERE (admitted_at IS NULL OR admitted_at < ?)"
            " AND (cooldown_noticed_at IS NULL OR cooldown_noticed_at < ?)"
            " AND (quota_noticed_at IS NULL OR quota_noticed_at < ?)",
            (idle_since, idle_since, idle_since),
        )


async def _answer_takes(database: Database) -> int:
    """Delete the answers whose takes are kept no longer, with their texts."""
    gone = "(state = ? AND updated_at < ?) OR (state <> ? AND updated_at < ?)"
    async with database.transaction() as tx:
        now = await tx.now()
        ages = (FROZEN, now - TAKES_FROZEN_KEPT_S, FROZEN, now - TAKES_OPEN_KEPT_S)
        await tx.execute(
            "DELETE FROM answer_take_texts WHERE answer_id IN"
            f" (SELECT answer_id FROM answer_takes WHERE {gone})",
            ages,
        )
        return await tx.execute(f"DELETE FROM answer_takes WHERE {gone}", ages)


async def _memories(database: Database, days: int) -> int:
    if not days:
        return 0
    return await MemoryStore(database, Bounds(0, 0)).older_than(days * DAY_S)


async def _summaries(database: Database, days: int) -> int:
    if not days:
        return 0
    return await SummaryStore(database).older_than(days * DAY_S)


async def _unasked_models(database: Database, chains: Chains) -> int:
    stored = await database.fetchall(
        "SELECT models FROM server_settings WHERE models IS NOT NULL"
        " UNION SELECT models FROM channel_settings WHERE models IS NOT NULL"
        " UNION SELECT models FROM personas WHERE models IS NOT NULL"
    )
    named = chains.models_named(row["models"] for row in stored)
    deleted = 0
    async with database.transaction() as tx:
        unprobed_since = await tx.now() - UNPROBED_KEPT_S
        marked = await tx.fetchall("SELECT endpoint, model, probe_at FROM model_health")
        for row in marked:
            key = (row["endpoint"], row["model"])
            ours = row["endpoint"] == chains.endpoint(row["model"].partition(":")[0])
            if key in named or (not ours and float(row["probe_at"]) >= unprobed_since):
                continue
            deleted += await tx.execute(
                "DELETE FROM model_health WHERE endpoint = ? AND model = ?", key
            )
    return deleted


class Retention:
    """One process's sweep, in a task of its own from `start` until `close`."""

    def __init__(self, database: Database, settings: Settings, chains: Chains) -> None:
        self._database = database
        self._settings = settings
        self._chains = chains
        self._loops = BackgroundLoops()

    def start(self) -> None:
        self._loops.start("sweeping old rows", self._step, pause_after_failure_s=60.0)

    async def close(self) -> None:
        await self._loops.close()

    async def _step(self) -> None:
        swept = await sweep(self._database, self._settings, self._chains)
        if swept.any:
            log.info(
                "retention: deleted %d token usage rows, %d idle user limits, %d persona "
                "messages, %d health marks of models no chain names, %d steps of messages'"
                " ways, %d answers' takes, %d memories and %d channel summaries",
                swept.token_usage,
                swept.user_limits,
                swept.persona_messages,
                swept.model_health,
                swept.message_fates,
                swept.answer_takes,
                swept.memories,
                swept.summaries,
            )
        await asyncio.sleep(SWEEP_INTERVAL_S)
