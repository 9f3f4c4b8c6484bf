"""The console's own server: what `/tomori` sets for it, read by each turn, and its limits.

The console is one channel (`CHANNEL`) of one server (`SERVER`) in the session's own database,
so what `/tomori` stores there lasts the session. Each turn reads the values in force afresh
through the same `ChannelConfig` the cog's turns read (the model chain, its providers built the
first time a chain names them, the system prompt, the prefill); a message is held to the
server's cooldown and daily tokens as it is sent, and a queued one to the tokens again as its
turn starts. The turns' tokens and outcomes are recorded, for the quota and `/tomori status`;
the memories and the channel's summary are kept as the cog keeps a server's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from tomori.cast.personas import PersonaStore
from tomori.config.models import ModelChain, ModelEntry
from tomori.config.settings import Settings
from tomori.console.history import USER_NAME
from tomori.delivery.notices import Notice
from tomori.delivery.traffic import TrafficReport
from tomori.generation.contexts import Budget
from tomori.generation.health import Sick
from tomori.memory.store import MemoryStore, memory_store
from tomori.memory.tools import memory_tools
from tomori.monitoring.exporter import NO_EXPORT, Exporter
from tomori.monitoring.metrics import Metrics
from tomori.monitoring.status import ServerStatus, server_status
from tomori.policy.admin import Where
from tomori.policy.limit_store import UserLimitStore
from tomori.policy.limits import Refusal, UserLimits
from tomori.policy.override_store import OverrideStore
from tomori.policy.overrides import Defaults, Resolved
from tomori.store import Database
from tomori.summary import SummaryStore
from tomori.tools.mcp import mcp_tools_for
from tomori.tools.registry import CURRENT_TIME, ToolRegistry
from tomori.tools.switches import BotTools, ToolCatalog, ToolSwitchStore
from tomori.turns import ChannelConfig
from tomori.turns.summaries import Summaries

SERVER = "console"
CHANNEL = "console"
HERE = Where(SERVER, CHANNEL)
USER = "console"
"""The person at the terminal, as the lock store and the limits know them."""
BOT = "tomori"
"""The bot, as the console shows its messages (and the summaries' sources name it)."""


@dataclass(frozen=True, slots=True)
class Held:
    """A message the limits do not let through, and whether Discord would say so now."""

    refusal: Refusal

    @property
    def notice(self) -> Notice | None:
        if not self.refusal.notify:
            return None
        return self.refusal.notice


class ConsoleServer:
    """`tomori.policy.admin.Administered` for the console, and the stores its turns run with."""

    def __init__(self, settings: Settings, chain: ModelChain) -> None:
        self._settings = settings
        self.config = ChannelConfig(settings, chain, autoreply_everywhere=True)
        """Every line typed is a message to the bot: its one channel answers every message."""
        self._limits: UserLimitStore | None = None
        self._database: Database | None = None
        self._personas: PersonaStore | None = None
        self._switches: ToolSwitchStore | None = None
        self._metrics: Metrics | None = None
        self._memories: MemoryStore | None = None
        self._summaries: Summaries | None = None
        builtin = (CURRENT_TIME, *memory_tools(settings))
        offered = (tool for tool in builtin if tool.name in settings.tools)
        self.tools = BotTools(ToolRegistry(offered), mcp_tools_for(settings, os.environ))
        """Its tools: `current_time`, the memory tools and the MCP servers of
        `TOMORI_MCP_CONFIG` (started with the console, closed with it)."""

    def start(self, database: Database, exporter: Exporter = NO_EXPORT) -> None:
        self._database = database
        self.config.start(database)
        self._limits = UserLimitStore(database)
        self._personas = PersonaStore(database)
        self._metrics = Metrics(database, exporter)
        self._switches = ToolSwitchStore(database)
        self._memories = memory_store(database, self._settings)
        if self._settings.summaries:
            self._summaries = Summaries(SummaryStore(database), self._settings, self._metrics)
        if self.tools.mcp is not None:
            self.tools.mcp.start()

    async def aclose(self) -> None:
        if self._summaries is not None:  # its folds end before the metrics and database close
            await self._summaries.aclose()
        if self.tools.mcp is not None:
            await self.tools.mcp.aclose()
        if self._metrics is not None:
            await self._metrics.close()
        await self.config.aclose()

    # -- Administered -------------------------------------------------------------------------

    @property
    def overrides(self) -> OverrideStore:
        if self.config.store is None:
            raise RuntimeError("the console is not started")
        return self.config.store

    @property
    def personas(self) -> PersonaStore:
        if self._personas is None:
            raise RuntimeError("the console is not started")
        return self._personas

    @property
    def metrics(self) -> Metrics:
        if self._metrics is None:
            raise RuntimeError("the console is not started")
        return self._metrics

    def check_models(self, raw: str) -> ModelChain:
        return self.config.check_models(raw)

    def defaults(self, where: Where) -> Defaults:
        return self.config.defaults(where.channel_id)

    def context_budget(self, entry: ModelEntry) -> Budget:
        return self.config.contexts.budget(entry)

    @property
    def settings(self) -> Settings:
        return self._settings

    async def status(self, guild_id: str) -> ServerStatus:
        if self._database is None:
            raise RuntimeError("the console is not started")
        await self.metrics.flushed()
        return await server_status(self._database, guild_id)

    def skipped(self) -> Sequence[Sick]:
        return ()  # the console asks each model of its chain in turn, every turn

    def traffic(self) -> TrafficReport | None:
        return None  # the console sends nothing to Discord

    @property
    def tool_switches(self) -> ToolSwitchStore:
        if self._switches is None:
            raise RuntimeError("the console is not started")
        return self._switches

    @property
    def memories(self) -> MemoryStore | None:
        """The memories the console's turns and `/memory` read (None: `TOMORI_MEMORIES=0`)."""
        return self._memories

    @property
    def summaries(self) -> Summaries | None:
        """The channel's summary, folded in the background as the session outgrows its window
        (None: `TOMORI_SUMMARIES=0`)."""
        return self._summaries

    @property
    def bot_name(self) -> str:
        return BOT

    def member_names(self, guild_id: str) -> tuple[str, ...]:
        return (USER_NAME,)  # its one member: you, as the model is shown your lines

    def tool_catalog(self, guild_id: str) -> ToolCatalog:
        return self.tools.catalog(guild_id)

    # -- a message and its turn ---------------------------------------------------------------

    async def admit(self, message_id: str) -> Held | None:
        """None if the message may be answered; else why not (its window is opened if so)."""
        limits = await self._user_limits()
        if not limits.active or self._limits is None:
            return None
        refusal = await self._limits.admit(SERVER, USER, message_id, limits, tells=True)
        return None if refusal is None else Held(refusal)

    async def may_start(self) -> Held | None:
        """None if a turn about to start may ask a model; else the day's tokens are spent."""
        limits = await self._user_limits()
        if not limits.counts_tokens or self._limits is None:
            return None
        await self.metrics.flushed()  # the turn before this one recorded its tokens
        refusal = await self._limits.quota_spent(SERVER, USER, limits, tells=True)
        return None if refusal is None else Held(refusal)

    async def follow_ups(self) -> bool:
        """Whether a message typed while an answer streams stops it (`/tomori followups`)."""
        return (await self._resolved()).follow_ups.value

    async def _resolved(self) -> Resolved:
        return await self.config.resolved(SERVER, CHANNEL, cached=False)

    async def _user_limits(self) -> UserLimits:
        return self.config.limits_of(await self._resolved())
