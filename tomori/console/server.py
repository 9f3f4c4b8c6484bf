"""The console's own server: what `/tomori` sets for it, read by each turn, and its limits.

The console is one channel (`CHANNEL`) of one server (`SERVER`) in the session's own database,
so what `/tomori` stores there lasts the session. Each turn reads the values in force afresh,
as the cog's turns do: the model chain (its providers built the first time a chain names
them), the system prompt; a message is held to the server's cooldown and daily tokens as it is
sent, and a queued one to the tokens again as its turn starts. The turns' tokens and outcomes
are recorded, for the quota and for `/tomori status`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tomori.config.models import ModelChain, ModelEntry
from tomori.config.settings import ConfigError, Settings
from tomori.delivery.notices import Notice, cooldown_notice, quota_notice
from tomori.delivery.traffic import TrafficReport
from tomori.generation.health import Sick
from tomori.generation.mcp import mcp_tools_for
from tomori.generation.tools import CURRENT_TIME, ToolRegistry
from tomori.policy.admin import Where
from tomori.policy.limit_store import UserLimitStore
from tomori.policy.limits import Limit, Refusal, UserLimits
from tomori.policy.metrics import Metrics
from tomori.policy.override_store import OverrideStore
from tomori.policy.overrides import Defaults, Resolved, Source, check_models, resolve
from tomori.policy.personas import Persona, PersonaStore
from tomori.policy.server_status import ServerStatus, server_status
from tomori.policy.sprites import with_sprites
from tomori.policy.tool_switches import BotTools, ToolCatalog, ToolSwitchStore
from tomori.prompt.prefill import Prefill
from tomori.providers.base import Provider
from tomori.store import Database

log = logging.getLogger(__name__)

SERVER = "console"
CHANNEL = "console"
HERE = Where(SERVER, CHANNEL)
USER = "console"
"""The person at the terminal, as the lock store and the limits know them."""


@dataclass(frozen=True, slots=True)
class TurnSetup:
    entries: tuple[ModelEntry, ...]
    providers: Mapping[str, Provider]
    system_prompt: str
    prefill: Prefill | None = None
    """The server's (or channel's) prefill, as `/tomori prefill set` stored it."""


@dataclass(frozen=True, slots=True)
class Held:
    """A message the limits do not let through, and whether Discord would say so now."""

    refusal: Refusal

    @property
    def notice(self) -> Notice | None:
        if not self.refusal.notify:
            return None
        make = cooldown_notice if self.refusal.limit is Limit.COOLDOWN else quota_notice
        return make(self.refusal.retry_at)


class ConsoleServer:
    """`tomori.policy.admin.Administered` for the console, and what its turns run with."""

    def __init__(self, settings: Settings, chain: ModelChain) -> None:
        self._settings = settings
        self._chain = chain
        self._providers: dict[str, Provider] = {}
        self._store: OverrideStore | None = None
        self._limits: UserLimitStore | None = None
        self._database: Database | None = None
        self._personas: PersonaStore | None = None
        self._switches: ToolSwitchStore | None = None
        self.metrics: Metrics | None = None
        builtin = (CURRENT_TIME,) if CURRENT_TIME.name in settings.tools else ()
        self.tools = BotTools(ToolRegistry(builtin), mcp_tools_for(settings, os.environ))
        """Its tools: `current_time` and the MCP servers of `TOMORI_MCP_CONFIG` (started
        with the console, closed with it)."""

    def start(self, database: Database) -> None:
        self._database = database
        self._store = OverrideStore(database)
        self._limits = UserLimitStore(database)
        self._personas = PersonaStore(database)
        self.metrics = Metrics(database)
        self._switches = ToolSwitchStore(database)
        self._providers = self._chain.build_providers()
        if self.tools.mcp is not None:
            self.tools.mcp.start()

    async def aclose(self) -> None:
        if self.tools.mcp is not None:
            await self.tools.mcp.aclose()
        if self.metrics is not None:
            await self.metrics.close()
        providers, self._providers = self._providers, {}
        for provider in providers.values():
            await provider.aclose()

    # -- Administered -------------------------------------------------------------------------

    @property
    def overrides(self) -> OverrideStore:
        if self._store is None:
            raise RuntimeError("the console is not started")
        return self._store

    @property
    def personas(self) -> PersonaStore:
        if self._personas is None:
            raise RuntimeError("the console is not started")
        return self._personas

    def check_models(self, raw: str) -> ModelChain:
        return check_models(raw, os.environ, self._chain.credentials)

    def defaults(self, where: Where) -> Defaults:
        return Defaults(
            models=self._chain.described,
            system_prompt=self._settings.system_prompt,
            autoreply=True,  # every line typed is a message to the bot
            cooldown_ms=self._settings.user_cooldown_ms,
            daily_tokens=self._settings.user_daily_tokens,
            follow_ups=self._settings.follow_ups,
        )

    async def status(self, guild_id: str) -> ServerStatus:
        if self.metrics is None or self._database is None:
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

    def tool_catalog(self) -> ToolCatalog:
        return self.tools.catalog()

    async def turn_tools(self) -> ToolRegistry:
        """The tools the console's turn is offered, less those turned off in it."""
        return await self.tools.for_turn(await self.tool_switches.read(SERVER, CHANNEL))

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
        if limits.daily_tokens <= 0 or self._limits is None or self.metrics is None:
            return None
        await self.metrics.flushed()  # the turn before this one recorded its tokens
        refusal = await self._limits.quota_spent(SERVER, USER, limits, tells=True)
        return None if refusal is None else Held(refusal)

    async def for_turn(self) -> TurnSetup:
        """The chain, its providers and the system prompt in force now."""
        resolved = await self._resolved()
        chain = self._chain
        if resolved.models.source is not Source.ENVIRONMENT:
            try:
                chain = self.check_models(resolved.models.value)
            except ConfigError as error:
                log.warning("the stored model chain no longer applies (%s)", error)
        missing = {n: c for n, c in chain.credentials.items() if n not in self._providers}
        if missing:
            self._providers.update(ModelChain((), missing).build_providers())
        prefill = Prefill(resolved.prefill.value) if resolved.prefill.value else None
        return TurnSetup(chain.entries, self._providers, resolved.system_prompt.value, prefill)

    def for_persona(self, setup: TurnSetup, persona: Persona) -> TurnSetup:
        """A persona's turn: its own prompt (with its sprites), and its own model chain if it
        has one."""
        prompt = with_sprites(persona.prompt, persona.name, persona.sprites)
        chain = None
        if persona.models is not None:
            try:
                chain = self.check_models(persona.models)
            except ConfigError as error:
                log.warning("persona %s: its models no longer apply (%s)", persona.name, error)
        if chain is None:
            return replace(setup, system_prompt=prompt)
        missing = {n: c for n, c in chain.credentials.items() if n not in self._providers}
        if missing:
            self._providers.update(ModelChain((), missing).build_providers())
        return TurnSetup(chain.entries, self._providers, prompt)

    async def follow_ups(self) -> bool:
        """Whether a message typed while an answer streams stops it (`/tomori followups`)."""
        return (await self._resolved()).follow_ups.value

    async def scenes_allowed(self) -> bool:
        """Whether `/scene` runs (`/tomori scenes`, as a server's admins set it)."""
        return (await self._resolved()).scenes.value

    async def _resolved(self) -> Resolved:
        channel, server = await self.overrides.read(SERVER, CHANNEL)
        return resolve(channel, server, self.defaults(HERE))

    async def _user_limits(self) -> UserLimits:
        resolved = await self._resolved()
        return UserLimits(resolved.cooldown_ms.value / 1000, resolved.daily_tokens.value)
