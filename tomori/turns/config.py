"""What a channel's turn runs with: its model chain, their providers, its system prompt.

The cog and the console read it alike. The providers live here: one per provider name (one
HTTP client), built for the environment's chain at start-up, and for a provider only an
admin's chain names the first time a turn needs it; `aclose` closes every one built. A stored
chain that no longer parses (a key removed from the environment since) is logged and the
environment's runs instead: a turn never fails on what an admin stored while the bot had other
keys.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from tomori.cast.personas import Persona
from tomori.cast.sprites import with_sprites
from tomori.config.models import Credentials, ModelChain, ModelEntry
from tomori.config.provider_kinds import PROVIDER_KINDS
from tomori.config.settings import ConfigError, Settings
from tomori.delivery.progress import Visibility
from tomori.generation.contexts import ContextBook, served_elsewhere
from tomori.policy.limits import UserLimits
from tomori.policy.override_store import OverrideStore, SettingsUnavailable
from tomori.policy.overrides import NOTHING, Defaults, Resolved, Source, check_models, resolve
from tomori.prompt.prefill import Prefill
from tomori.providers.base import Provider
from tomori.store import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TurnConfig:
    entries: tuple[ModelEntry, ...]
    providers: Mapping[str, Provider]
    system_prompt: str
    images: bool
    """Whether any model of the chain is sent images: if none is, none are read."""
    prefill: Prefill | None = None
    """The channel's (or its server's) prefill: what its answers begin with (`/tomori
    prefill`); a persona's own or a `/respond` one replaces it, and a scene's lines never
    take it (`tomori.turns.request.AnswerBrief`)."""


class ChannelConfig:
    def __init__(
        self,
        settings: Settings,
        chain: ModelChain,
        environ: Mapping[str, str] | None = None,
        *,
        autoreply_everywhere: bool = False,
    ) -> None:
        """`autoreply_everywhere`: every channel answers every message by default (the
        console's one channel), else those of `TOMORI_CHANNELS`."""
        self._settings = settings
        self._autoreply_everywhere = autoreply_everywhere
        self.chain = chain
        self.environ = os.environ if environ is None else environ
        self.store: OverrideStore | None = None
        self._providers: dict[str, Provider] = {}
        self.contexts = ContextBook(settings, served_elsewhere(chain, self.environ), chain.entries)
        """Each model's context budget, and what its server taught it."""

    @property
    def settings(self) -> Settings:
        return self._settings

    def start(self, database: Database) -> None:
        self.store = OverrideStore(database)
        self._providers = self.chain.build_providers()

    async def aclose(self) -> None:
        providers, self._providers = self._providers, {}
        for provider in providers.values():
            await provider.aclose()
        self.store = None

    @property
    def providers(self) -> Mapping[str, Provider]:
        """Every provider built so far, by name."""
        return self._providers

    def check_models(self, raw: str) -> ModelChain:
        """An admin's chain, checked against the keys this bot has; `ConfigError` if bad."""
        return check_models(raw, self.environ, self.chain)

    def endpoint(self, provider: str) -> str:
        """Where this process asks the provider's models (`Credentials.endpoint`): the
        environment's chain's credentials, else those an admin's chain takes from the
        environment (`check_models`)."""
        credentials = self.chain.credentials.get(provider)
        if credentials is not None:
            return credentials.endpoint
        kind = PROVIDER_KINDS.get(provider)
        base_url = self.environ.get(kind.base_url_variable, "").strip() if kind else ""
        return Credentials("", base_url or None).endpoint

    def models_named(self, stored: Iterable[str]) -> set[tuple[str, str]]:
        """(endpoint, provider:model) of every model a turn may ask: the environment's chain's,
        and those of the `stored` chains (a server's, a channel's, a persona's) that still
        apply; one that does not runs the environment's instead."""
        chains = [self.chain]
        for raw in stored:
            try:
                chains.append(self.check_models(raw))
            except ConfigError:
                continue
        return {(self.endpoint(e.provider), e.label) for chain in chains for e in chain.entries}

    def defaults(self, channel_id: int | str) -> Defaults:
        autoreply = self._autoreply_everywhere or (
            str(channel_id).isdigit() and int(channel_id) in self._settings.channels
        )
        return Defaults(
            models=self.chain.described,
            system_prompt=self._settings.system_prompt,
            autoreply=autoreply,
            cooldown_ms=self._settings.user_cooldown_ms,
            daily_tokens=self._settings.user_daily_tokens,
            follow_ups=self._settings.follow_ups,
            progress=self._settings.progress,
            errors=self._settings.errors,
        )

    async def resolved(
        self, guild_id: int | str | None, channel_id: int | str, *, cached: bool
    ) -> Resolved:
        """What applies in the channel now; `cached` for the reply rule (see OverrideStore)."""
        channel, server = NOTHING, NOTHING
        if guild_id is not None and self.store is not None:
            read = self.store.read_cached if cached else self.store.read
            channel, server = await read(str(guild_id), str(channel_id))
        return resolve(channel, server, self.defaults(channel_id))

    async def user_limits(self, guild_id: int | str | None) -> UserLimits:
        """The cooldown and daily tokens for each user of a server (None: direct messages, the
        environment's), through the cache: asked for every message a limit applies to."""
        return self.limits_of(await self._server(guild_id, "limits"))

    def limits_of(self, resolved: Resolved) -> UserLimits:
        """The limits a server's settings, as resolved, hold each user to, with the author's
        budget for the whole server."""
        return UserLimits(
            resolved.cooldown_ms.value / 1000,
            resolved.daily_tokens.value,
            self._settings.server_daily_tokens,
        )

    async def follow_ups(self, guild_id: int | str | None) -> bool:
        """Whether a server's users' follow-ups stop their answer (None: direct messages, the
        environment's), through the cache: asked for every message admitted."""
        return (await self._server(guild_id, "follow-up setting")).follow_ups.value

    async def swipes(self, guild_id: int | str | None) -> bool:
        """Whether a server's last answer carries Regenerate and ◀ ▶ (None: direct messages,
        where they always do), through the cache: asked as each answer ends and each press."""
        return (await self._server(guild_id, "swipes setting")).swipes.value

    async def visibility(self, guild_id: int | str | None) -> Visibility:
        """What a server's direct triggers show of their turns (None: direct messages, the
        environment's), through the cache: asked as each turn starts and as one is queued."""
        resolved = await self._server(guild_id, "progress and errors settings")
        return Visibility(resolved.progress.value, resolved.errors.value)

    async def _server(self, guild_id: int | str | None, what: str) -> Resolved:
        """What a server sets over the environment, through the cache; the environment's
        values while the store cannot say."""
        server = NOTHING
        if guild_id is not None and self.store is not None:
            try:
                _, server = await self.store.read_cached(str(guild_id), "")
            except Exception as error:
                if not self.store.is_database_error(error):
                    raise
                log.log(  # the message goes on: the lock store holds it through an outage
                    logging.DEBUG if isinstance(error, SettingsUnavailable) else logging.WARNING,
                    "server %s: could not read its %s (%r); the environment's apply",
                    guild_id,
                    what,
                    error,
                )
        return resolve(NOTHING, server, self.defaults(0))

    async def for_turn(self, guild_id: str | None, channel_id: str) -> TurnConfig:
        """What a turn in the channel runs with now (read afresh: a change applies at once)."""
        resolved = await self.resolved(guild_id, channel_id, cached=False)
        chain = self.chain
        if resolved.models.source is not Source.ENVIRONMENT:
            try:
                chain = self.check_models(resolved.models.value)
            except ConfigError as error:
                log.warning(
                    "channel %s: the stored model chain no longer applies (%s); using %s",
                    channel_id,
                    error,
                    self.chain.described,
                )
        providers = self._providers_for(chain)
        prompt = resolved.system_prompt.value
        prefill = Prefill(resolved.prefill.value) if resolved.prefill.value else None
        return TurnConfig(chain.entries, providers, prompt, chain.sees_images, prefill)

    def for_persona(self, channel_turn: TurnConfig, persona: Persona) -> TurnConfig:
        """What a persona's turn in a channel runs with: its own prompt (telling its model how
        to switch its sprites, if it has any), and its own model
        chain if it has one (else the channel's); a stored chain that no longer parses is
        logged and the channel's runs instead."""
        prompt = with_sprites(persona.prompt, persona.name, persona.sprites)
        config = replace(channel_turn, system_prompt=prompt)
        if persona.models is None:
            return config
        try:
            chain = self.check_models(persona.models)
        except ConfigError as error:
            log.warning(
                "persona %s: its model chain no longer applies (%s); using the channel's",
                persona.name,
                error,
            )
            return config
        providers = self._providers_for(chain)
        return replace(config, entries=chain.entries, providers=providers, images=chain.sees_images)

    def _providers_for(self, chain: ModelChain) -> Mapping[str, Provider]:
        missing = {n: c for n, c in chain.credentials.items() if n not in self._providers}
        if missing:
            self._providers.update(ModelChain((), missing).build_providers())
        return self._providers
