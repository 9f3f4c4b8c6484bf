"""What the cog runs with once started: opened in one exit stack, closed in reverse.

`Runtime.open` opens the database (migrating it), the providers, the stores, the model
health probes, the sweep of old rows, the MCP servers and, last, the channel locks, which at
once run the turns they recover from a stopped process; each part is closed by the stack in
reverse order, so turns end (and release their locks) while the providers and the database are
still open. A runtime is whole from the moment it exists: nothing on it is "not started yet".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass

from tomori.cast.personas import PersonaStore
from tomori.config.models import ModelEntry
from tomori.config.settings import Settings, seconds
from tomori.console.probe import probe
from tomori.delivery.budget import RequestBudget
from tomori.locks import (
    ChannelLocks,
    ClearedTeller,
    ExpiryTeller,
    Turn,
    TurnGuard,
    lock_backend,
)
from tomori.memory.store import MemoryStore, memory_store
from tomori.monitoring.exporter import Exporter, Gauge
from tomori.monitoring.levels import lock_levels
from tomori.monitoring.metrics import Metrics
from tomori.monitoring.model_health import ModelHealthStore
from tomori.monitoring.why_book import WhyBook
from tomori.policy.limit_store import UserLimitStore
from tomori.policy.limits import BotTurns
from tomori.policy.retention import Retention
from tomori.store import Database
from tomori.store.connect import open_database
from tomori.summary import SummaryStore
from tomori.tools.registry import CURRENT_TIME
from tomori.tools.switches import BotTools, ToolSwitchStore
from tomori.turns import ChannelConfig, Stage
from tomori.turns.summaries import Summaries
from tomori_cog.surface import DiscordParts

log = logging.getLogger(__name__)

StagedRunner = Callable[[Stage, Turn, TurnGuard], Awaitable[None]]


@dataclass(slots=True, eq=False)
class Runtime:
    """The started cog's parts (see the module docstring)."""

    database: Database
    locks: ChannelLocks
    personas: PersonaStore
    metrics: Metrics
    health: ModelHealthStore | None
    """The models turns skip for now, shared with every process (None: probes are off)."""
    tool_switches: ToolSwitchStore
    why: WhyBook
    """What became of each message, for "Why no answer?" (`tomori.monitoring.why_book`)."""
    memories: MemoryStore | None
    """The memories turns and `/memory` read (None: `TOMORI_MEMORIES=0`)."""
    summaries: Summaries | None
    """The channel summaries, which a deleted message drops (None: `TOMORI_SUMMARIES=0`)."""
    _stack: AsyncExitStack
    _closing: asyncio.Task[None] | None = None
    """Closing, once begun: a caller cut short by its own deadline leaves it running, and the
    next `aclose` awaits the same (nothing is left half closed and forgotten)."""

    @classmethod
    async def open(
        cls,
        parts: DiscordParts,
        tools: BotTools,
        drawn_in: BotTurns,
        play_turn: StagedRunner,
        tell_expired: ExpiryTeller,
        tell_cleared: ClearedTeller,
    ) -> Runtime:
        """`play_turn` plays each turn the locks run, on the stage opened here (what every
        turn is played with: it lives in that closure, the turns' only reader)."""
        settings = parts.settings

        async def run_turn(turn: Turn, guard: TurnGuard) -> None:
            await play_turn(stage, turn, guard)  # the locks run none before `stage` is set

        exporter = parts.exporter
        async with AsyncExitStack() as stack:
            database = await open_database(settings, failed=exporter.database_failed)
            stack.push_async_callback(database.close)
            personas = PersonaStore(database)
            parts.webhooks.open(database)
            stack.callback(parts.webhooks.close)
            metrics = Metrics(database, exporter)
            stack.push_async_callback(metrics.close)
            why = WhyBook(database)
            stack.push_async_callback(why.close)
            parts.gate.open(database, why)
            parts.takes.open(database)
            parts.config.start(database)
            stack.push_async_callback(parts.config.aclose)
            locks = ChannelLocks(
                lock_backend(database, settings), settings, run_turn, tell_expired, tell_cleared
            )
            health = _model_health(database, locks.instance_id, settings, parts.config)
            if health is not None:
                stack.push_async_callback(health.close)
            retention = Retention(database, settings, parts.config)
            retention.start()
            stack.push_async_callback(retention.close)
            tool_switches = ToolSwitchStore(database)
            memories = memory_store(database, settings)
            summaries = None
            if settings.summaries:  # its folds end before the metrics and database close
                summaries = Summaries(SummaryStore(database), settings, metrics)
                stack.push_async_callback(summaries.aclose)
            stage = Stage(
                settings,
                locks,
                parts.config,
                tools,
                tool_switches,
                personas,
                metrics,
                health,
                drawn_in,
                UserLimitStore(database),
                why,
                memories,
                summaries,
            )
            if tools.mcp is not None:  # closed once no turn runs: nothing waits on a server then
                tools.mcp.start()
                stack.push_async_callback(tools.mcp.aclose)
            stack.callback(parts.pacing.budget.close)
            stack.push_async_callback(locks.close)
            _export_levels(stack, exporter, locks, parts.pacing.budget)
            # Last: the locks run the turns they recover at once, with all of the above.
            await locks.start()
            parts.pacing.watch(parts.bot, parts.library)
            sharing = asyncio.create_task(
                parts.pacing.shared(locks.live_processes), name="tomori-request-share"
            )
            stack.push_async_callback(_cancelled, sharing)
            runtime = cls(
                database,
                locks,
                personas,
                metrics,
                health,
                tool_switches,
                why,
                memories,
                summaries,
                stack.pop_all(),
            )
        log.info("tomori serving with %s", parts.config.chain.described)
        return runtime

    async def aclose(self) -> None:
        """Stop every turn, release its lock, close the providers and the database."""
        if self._closing is None:
            self._closing = asyncio.create_task(self._stack.aclose(), name="tomori-close")
        await asyncio.shield(self._closing)


def _export_levels(
    stack: AsyncExitStack, exporter: Exporter, locks: ChannelLocks, budget: RequestBudget
) -> None:
    """The levels a scrape reads afresh, until the runtime closes."""

    async def waiting() -> float:
        return budget.waiting

    stack.callback(lock_levels(locks, exporter))
    stack.callback(exporter.reads(Gauge.REQUESTS_WAITING, waiting))


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def _model_health(
    database: Database, instance_id: str, settings: Settings, config: ChannelConfig
) -> ModelHealthStore | None:
    """The models turns skip for now, shared with every process (None: never skip)."""
    interval_ms = settings.model_probe_interval_ms
    if interval_ms == 0:
        return None

    async def probed(label: str) -> bool | None:
        """Ask the model a tiny question, as `--check` does; None if no provider can."""
        provider_name, _, model = label.partition(":")
        provider = config.providers.get(provider_name)
        if provider is None:
            return None
        entry = ModelEntry(provider_name, model)
        tools = (CURRENT_TIME.spec,) if settings.tools else ()  # does it take tools at all
        return (await probe(entry, provider, settings, None, tools)).answered

    health = ModelHealthStore(
        database,
        instance_id,
        probed,
        config.endpoint,
        interval_s=seconds(interval_ms),
        probe_budget_s=settings.first_token_budget_s + settings.delivery_budget_s,
    )
    health.start()
    return health
