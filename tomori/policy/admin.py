"""`/tomori`'s subcommands without Discord: what each checks, stores and answers.

Each is an `Action`: given what holds the bot's settings (`Administered`) and where it runs
(`Where`), it checks its input, stores the change in one statement (so nothing is half-applied)
and returns the notice the admin is shown; `perform` runs one and turns what it refused, or a
store that failed, into that notice. The Discord cogs (`tomori_cog/cogs/admin.py`) and the
console run the same actions, so a setting tried in the console reads as it does in a server.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from tomori.cast.personas import (
    PersonaStore,
)
from tomori.config.models import ModelChain, ModelEntry
from tomori.config.parsers import choice
from tomori.config.scope import Scope
from tomori.config.settings import ConfigError, Settings, ShowErrors, ShowProgress
from tomori.delivery.notices import Notice, NoticeColour
from tomori.delivery.progress import MARKS, Stage
from tomori.delivery.traffic import TrafficReport
from tomori.generation.contexts import Budget
from tomori.generation.health import Sick
from tomori.memory.store import MemoryStore, Refusal
from tomori.monitoring.status import ServerStatus, describe
from tomori.policy.notes import memories_in_force, summaries_in_force
from tomori.policy.override_store import OverrideStore
from tomori.policy.overrides import (
    Defaults,
    Overrides,
    Resolved,
    Source,
    check_limits,
    check_prefill,
    check_prompt,
    resolve,
)
from tomori.tools.switches import (
    ToolCatalog,
    ToolSwitchStore,
)
from tomori.words import Clauses, Said, Text, said, say

log = logging.getLogger(__name__)

SHOWN_PROMPT_CHARS = 1_000
"""How much of a system prompt `show` quotes: an embed holds 4,096 characters."""

NOT_CHANGED = Notice.of(said("title.not_changed"), said("settings.not_changed"), NoticeColour.ERROR)


@dataclass(frozen=True, slots=True)
class Where:
    """The server and channel a subcommand runs in, as the settings store keys them."""

    guild_id: str
    channel_id: str
    cannot_post: tuple[Said, ...] = ()
    """Why the bot could not answer in this channel now (its permissions), if it could not."""


class Administered(Protocol):
    """What the actions act on: the stored settings, the bot's own, its keys, its metrics."""

    @property
    def overrides(self) -> OverrideStore: ...

    @property
    def personas(self) -> PersonaStore: ...

    @property
    def bot_name(self) -> str:
        """The name the bot shows in the server: no persona may pass for it."""
        ...

    def member_names(self, guild_id: str) -> Iterable[str]:
        """The names server `guild_id`'s members go by, as far as the bot knows them: no
        persona may pass for any (each member's nickname, global name and username)."""
        ...

    def check_models(self, raw: str) -> ModelChain:
        """A chain an admin gives, checked against the keys the bot has; `ConfigError`."""
        ...

    def defaults(self, where: Where) -> Defaults:
        """What applies where nothing is set: the bot's environment."""
        ...

    def context_budget(self, entry: ModelEntry) -> Budget:
        """What `entry`'s requests are fitted to now (`tomori.generation.contexts`)."""
        ...

    @property
    def settings(self) -> Settings:
        """The author's settings (what no server changes: the memories' and summaries')."""
        ...

    async def status(self, guild_id: str) -> ServerStatus:
        """The server's last day, once every metric recorded so far is written."""
        ...

    def skipped(self) -> Sequence[Sick]:
        """The models every turn skips right now (a model's health is the bot's)."""
        ...

    def traffic(self) -> TrafficReport | None:
        """What this process's requests met at Discord lately; None where nothing is sent to
        Discord (the console)."""
        ...

    @property
    def tool_switches(self) -> ToolSwitchStore: ...

    @property
    def memories(self) -> MemoryStore | None:
        """The memories kept (None: `TOMORI_MEMORIES=0`)."""
        ...

    def tool_catalog(self, guild_id: str) -> ToolCatalog:
        """The tools the bot could offer now in server `guild_id`, and its MCP servers'
        states."""
        ...


Action = Callable[[Administered, Where], Awaitable[Notice]]


async def perform(action: Action, target: Administered, where: Where) -> Notice:
    """What `action` answers; a refused input says why, a failed store that nothing changed."""
    try:
        return await action(target, where)
    except ConfigError as error:
        return refused(str(error))
    except Exception:
        log.exception("/tomori failed in channel %s", where.channel_id)
        return NOT_CHANGED


def set_models(models: str, scope: str = "channel") -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        chain = target.check_models(models)
        changes = Overrides(models=chain.described)
        await target.overrides.set(scope_of(scope), *keys(where), changes)
        return done(said("settings.models", where=scope_name(scope), models=chain.described))

    return action


def set_prompt(text: str, scope: str = "channel") -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        prompt = check_prompt(text)
        changes = Overrides(system_prompt=prompt)
        await target.overrides.set(scope_of(scope), *keys(where), changes)
        return done(said("settings.prompt", where=scope_name(scope), count=len(prompt)))

    return action


def set_prefill(text: str, scope: str = "channel") -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        prefill = check_prefill(text)
        await target.overrides.set(scope_of(scope), *keys(where), Overrides(prefill=prefill))
        quoted, count = _quoted(prefill), len(prefill)
        return done(said("settings.prefill", where=scope_name(scope), count=count, quoted=quoted))

    return action


def reset_prefill(scope: str = "channel") -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        if not await target.overrides.clear(scope_of(scope), *keys(where), "prefill"):
            return done(said("settings.no_prefill", where=scope_name(scope)))
        return done(said("settings.prefill_cleared", where=scope_name(scope)))

    return action


def set_autoreply(enabled: bool) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        changes = Overrides(autoreply=enabled)
        await target.overrides.set(Scope.CHANNEL, *keys(where), changes)
        if not enabled:
            return done(said("settings.autoreply_off"))
        if not where.cannot_post:
            return done(said("settings.autoreply_on"))
        lacking = Clauses(where.cannot_post)
        return done(said("settings.autoreply_on_cannot_post", lacking=lacking))

    return action


def set_follow_ups(enabled: bool) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        await target.overrides.set(Scope.SERVER, *keys(where), Overrides(follow_ups=enabled))
        return done(said("settings.follow_ups_on" if enabled else "settings.follow_ups_off"))

    return action


def set_swipes(enabled: bool) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        await target.overrides.set(Scope.SERVER, *keys(where), Overrides(swipes=enabled))
        return done(said("settings.swipes_on" if enabled else "settings.swipes_off"))

    return action


def set_progress(mode: str) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        chosen = choice(ShowProgress)("mode", mode)  # Discord offers the choices; not trusted
        await target.overrides.set(Scope.SERVER, *keys(where), Overrides(progress=chosen))
        if chosen is ShowProgress.REACTIONS:
            marks = {stage.value: MARKS[stage] or "" for stage in _SHOWN_STAGES}
            return done(said("settings.progress_reactions", **marks))
        return done(said("settings.progress_off"))

    return action


_SHOWN_STAGES = (Stage.QUEUED, Stage.WORKING, Stage.TOOL, Stage.STOPPED)


def set_errors(mode: str) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        chosen = choice(ShowErrors)("mode", mode)
        await target.overrides.set(Scope.SERVER, *keys(where), Overrides(errors=chosen))
        if chosen is ShowErrors.REACT:
            return done(said("settings.errors_react", failed=MARKS[Stage.FAILED] or ""))
        return done(said(f"settings.errors_{chosen.value}"))

    return action


def set_limits(cooldown_ms: int | None, daily_tokens: int | None) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        if cooldown_ms is None and daily_tokens is None:
            return refused(said("settings.limits_missing"))
        limits = check_limits(cooldown_ms, daily_tokens, target.defaults(where))
        await target.overrides.set(Scope.SERVER, *keys(where), limits)
        now = await _resolved(target, where)
        shown = _limits(now.cooldown_ms.value, now.daily_tokens.value)
        sources = _sources(now.cooldown_ms.source, now.daily_tokens.source)
        return done(said("settings.limits", limits=shown, sources=sources))

    return action


def set_scenes(enabled: bool) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        await target.overrides.set(Scope.SERVER, *keys(where), Overrides(scenes=enabled))
        return done(said("settings.scenes_on" if enabled else "settings.scenes_off"))

    return action


def reset(scope: str = "channel") -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        cleared = await target.overrides.reset(scope_of(scope), *keys(where))
        switched = await target.tool_switches.reset(scope_of(scope), *keys(where))
        if not (cleared or switched):
            return done(said("settings.nothing_set", where=scope_name(scope)))
        return done(said("settings.cleared", where=scope_name(scope)))

    return action


async def show(target: Administered, where: Where) -> Notice:
    resolved = await _resolved(target, where)
    in_force = await _in_force(target, where, resolved.models.value)
    shown = _shown(resolved, in_force)
    return Notice.of(said("title.in_this_channel"), shown, NoticeColour.SUCCESS)


async def _in_force(target: Administered, where: Where, models: str) -> tuple[str, ...]:
    """The context budget each model of `models` is fitted to now, and what its turns are
    shown of the channel's summary and of their memories; no budgets nor summaries if the
    chain can no longer be used (a key gone since it was chosen: its turns say so)."""
    settings = target.settings
    refused = target.memories is not None and await target.memories.refuses(
        Refusal.SERVER, where.guild_id
    )
    memories = f"Memories: {memories_in_force(settings, refused_here=refused)}"
    try:
        chain = target.check_models(models)
    except ConfigError:
        return (memories,)
    budgets = "; ".join(f"{e.label} {target.context_budget(e).described}" for e in chain.entries)
    summaries, _ = summaries_in_force(settings, chain)
    return f"Context: {budgets}", f"Summaries: {summaries}", memories


async def status(target: Administered, where: Where) -> Notice:
    counts = await target.status(where.guild_id)
    shown = describe(counts, target.skipped(), target.traffic())
    return Notice.of(said("title.in_this_server"), shown, NoticeColour.SUCCESS)


def refused(description: Text) -> Notice:
    """What an admin is told of an input refused: the catalog's words, or a setting's own
    error (`ConfigError`, in English)."""
    return Notice.of(said("title.not_changed"), description, NoticeColour.ERROR)


async def _resolved(target: Administered, where: Where) -> Resolved:
    """What applies there now, read afresh (never through the store's cache)."""
    channel, server = await target.overrides.read(*keys(where))
    return resolve(channel, server, target.defaults(where))


def _quoted(text: str) -> str:
    """`text` as a quote, cut to what an embed shows (`SHOWN_PROMPT_CHARS`)."""
    if len(text) > SHOWN_PROMPT_CHARS:
        text = text[:SHOWN_PROMPT_CHARS] + "…"
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


def _shown(resolved: Resolved, in_force: Sequence[str]) -> str:
    prefill = resolved.prefill
    if prefill.value:
        begins = f"Prefill, what answers begin with ({prefill.source}):\n{_quoted(prefill.value)}"
    else:
        begins = "Prefill: none"
    return "\n".join(
        (
            f"Models: {resolved.models.value} ({resolved.models.source})",
            *in_force,
            f"Answers every message: {'yes' if resolved.autoreply.value else 'no'}"
            f" ({resolved.autoreply.source})",
            f"Limits: {say(_limits(resolved.cooldown_ms.value, resolved.daily_tokens.value))}"
            f" ({say(_sources(resolved.cooldown_ms.source, resolved.daily_tokens.source))})",
            f"Scenes: {'on' if resolved.scenes.value else 'off'} ({resolved.scenes.source})",
            f"Follow-ups: {'on' if resolved.follow_ups.value else 'off'}"
            f" ({resolved.follow_ups.source})",
            f"Swipes: {'on' if resolved.swipes.value else 'off'} ({resolved.swipes.source})",
            f"Progress: {resolved.progress.value} ({resolved.progress.source})",
            f"Errors: {resolved.errors.value} ({resolved.errors.source})",
            begins,
            f"System prompt ({resolved.system_prompt.source}):",
            _quoted(resolved.system_prompt.value),
        )
    )


def _sources(*sources: Source) -> Clauses:
    """Where values came from, each named once (`source.*`, whose English is `Source`'s)."""
    named = (said(f"source.{source.name.lower()}") for source in dict.fromkeys(sources))
    return Clauses(tuple(named))


def _limits(cooldown_ms: int, daily_tokens: int) -> Said:
    off = said("settings.off")
    cooldown = said("settings.cooldown_ms", count=cooldown_ms) if cooldown_ms else off
    tokens: str | Said = f"{daily_tokens}" if daily_tokens else off
    return said("settings.limits_shown", cooldown=cooldown, tokens=tokens)


def keys(where: Where) -> tuple[str, str]:
    return where.guild_id, where.channel_id


def scope_of(scope: str) -> Scope:
    """The scope option's value; Discord offers only the two, but is not trusted to."""
    return choice(Scope)("scope", scope)


def scope_name(scope: str) -> Said:
    return said("scope.server" if scope_of(scope) is Scope.SERVER else "scope.channel")


def cut_lines(lines: Sequence[str], most_chars: int) -> str:
    """`lines` one under another, as many as `most_chars` holds (an embed holds 4,096), then
    one saying how many more there are."""
    shown: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) > most_chars:
            shown.append(f"… and {len(lines) - len(shown)} more")
            break
        shown.append(line)
        used += len(line) + 1
    return "\n".join(shown)


def done(description: Text) -> Notice:
    return Notice.of(said("title.settings"), description, NoticeColour.SUCCESS)
