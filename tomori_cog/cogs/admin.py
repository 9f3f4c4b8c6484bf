"""`/tomori`: what a server's admins set for their server and its channels, in both libraries.

Each subcommand here is an `Action`: given the service and where the command ran, it checks
its input, stores the change in one statement (so nothing is half-applied) and returns the
notice the admin is shown. The cogs only declare the commands and forward their options;
`run` answers ephemerally, deferring if the database is slow (see `reply_in_time`). Who may
run them is Discord's to decide: the group is guild-only, and visible by default to members
with Manage Server (`PERMISSION`), which each server can widen or narrow.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tomori.config.parsers import choice
from tomori.config.settings import ConfigError
from tomori.delivery.notices import Notice, NoticeColour
from tomori.policy.override_store import OverrideStore
from tomori.policy.overrides import Overrides, Resolved, Scope, Source, check_limits, check_prompt
from tomori.policy.server_status import describe, server_status
from tomori_cog.cogs.shared import reply_in_time
from tomori_cog.library import Library
from tomori_cog.listener.deliverability import missing_permissions
from tomori_cog.service import TomoriService

log = logging.getLogger(__name__)

GROUP_DESCRIPTION = "Set how Tomori answers in this server and its channels"
PERMISSION = "manage_guild"
"""The permission a member needs by default (Discord's "Manage Server")."""
SCOPES = tuple(scope.value for scope in Scope)
SHOWN_PROMPT_CHARS = 1_000
"""How much of a system prompt `/tomori show` quotes: an embed holds 4,096 characters."""

DESCRIPTIONS = {
    "model": "Set the model chain (provider:model, comma separated, primary first)",
    "prompt": "Set the system prompt",
    "autoreply": "Answer every message in this channel, or only when addressed",
    "show": "Show what applies in this channel and where each value comes from",
    "reset": "Clear this channel's (or the server's) settings",
    "status": "How the models behaved in this server over the last 24 hours",
    "limits": "Set this server's per-user cooldown and daily token quota (0 turns one off)",
}
OPTION_DESCRIPTIONS = {
    "models": "provider:model, comma separated, primary first (as TOMORI_MODELS)",
    "text": "the system prompt",
    "enabled": "true to answer every message here, false for only mentions and replies",
    "scope": "channel (the default) or server",
    "cooldown_ms": "least milliseconds between two turns of one user; 0 for none",
    "daily_tokens": "most tokens one user may use per UTC day; 0 for no limit",
}


@dataclass(frozen=True, slots=True)
class Where:
    guild_id: int
    channel_id: int
    cannot_post: tuple[str, ...] = ()
    """Why the bot could not answer in this channel now (its permissions), if it could not."""


Action = Callable[[TomoriService, Where], Awaitable[Notice]]


async def run(library: Library, service: TomoriService, interaction: Any, action: Action) -> None:
    """Answer the interaction with what `action` says, ephemerally."""
    outcome = _outcome(library, service, interaction, action)
    await reply_in_time(library, interaction, outcome, "/tomori")


async def _outcome(
    library: Library, service: TomoriService, interaction: Any, action: Action
) -> Notice:
    if interaction.guild_id is None or interaction.channel_id is None:
        return _refused("These commands work in a server's channels only.")
    channel = interaction.channel
    cannot_post = missing_permissions(library, channel) if _has_permissions(channel) else []
    where = Where(interaction.guild_id, interaction.channel_id, tuple(cannot_post))
    try:
        await service.ensure_started()
        notice = await action(service, where)
        log.info(
            "/tomori in channel %s by user %s: %s",
            interaction.channel_id,
            interaction.user.id,
            notice.description.splitlines()[0] if notice.description else notice.title,
        )
        return notice
    except ConfigError as error:
        return _refused(str(error))
    except Exception:
        log.exception("/tomori failed in channel %s", interaction.channel_id)
        return Notice(
            "Not Changed",
            "The settings could not be read or saved just now; nothing was changed. "
            "Please try again.",
            NoticeColour.ERROR,
        )


def set_models(models: str, scope: str = "channel") -> Action:
    async def action(service: TomoriService, where: Where) -> Notice:
        chain = service.config.check_models(models)
        await _store(service).set(_scope(scope), *_keys(where), Overrides(models=chain.described))
        return _done(f"Models for {_scope_name(scope)}: {chain.described}")

    return action


def set_prompt(text: str, scope: str = "channel") -> Action:
    async def action(service: TomoriService, where: Where) -> Notice:
        prompt = check_prompt(text)
        await _store(service).set(_scope(scope), *_keys(where), Overrides(system_prompt=prompt))
        return _done(f"System prompt for {_scope_name(scope)} set ({len(prompt)} characters).")

    return action


def set_autoreply(enabled: bool) -> Action:
    async def action(service: TomoriService, where: Where) -> Notice:
        await _store(service).set(Scope.CHANNEL, *_keys(where), Overrides(autoreply=enabled))
        said = "answers every message" if enabled else "answers only mentions and replies"
        if not enabled or not where.cannot_post:
            return _done(f"This channel now {said}.")
        lacking = "; ".join(where.cannot_post)
        return _done(f"This channel now {said}, but the bot cannot post here yet ({lacking}).")

    return action


def set_limits(cooldown_ms: int | None, daily_tokens: int | None) -> Action:
    async def action(service: TomoriService, where: Where) -> Notice:
        if cooldown_ms is None and daily_tokens is None:
            return _refused("Give cooldown_ms, daily_tokens or both.")
        limits = check_limits(cooldown_ms, daily_tokens)
        await _store(service).set(Scope.SERVER, *_keys(where), limits)
        now = await service.config.resolved(where.guild_id, where.channel_id, cached=False)
        return _done(
            "Limits for this server: "
            f"{_limits(now.cooldown_ms.value, now.daily_tokens.value)}"
            f" ({_sources(now.cooldown_ms.source, now.daily_tokens.source)})"
        )

    return action


def reset(scope: str = "channel") -> Action:
    async def action(service: TomoriService, where: Where) -> Notice:
        cleared = await _store(service).reset(_scope(scope), *_keys(where))
        if not cleared:
            return _done(f"Nothing was set for {_scope_name(scope)}.")
        return _done(f"Cleared the settings of {_scope_name(scope)}.")

    return action


async def show(service: TomoriService, where: Where) -> Notice:
    resolved = await service.config.resolved(where.guild_id, where.channel_id, cached=False)
    return Notice("Tomori in this channel", _shown(resolved), NoticeColour.SUCCESS)


async def status(service: TomoriService, where: Where) -> Notice:
    database = service.database
    if service.metrics is None or database is None:
        raise RuntimeError("the service is not started")
    await service.metrics.flushed()
    counts = await server_status(database, str(where.guild_id))
    skipped = service.health.skipped() if service.health is not None else []
    shown = describe(counts, skipped, service.pacing.report())
    return Notice("Tomori in this server, last 24 hours", shown, NoticeColour.SUCCESS)


def _shown(resolved: Resolved) -> str:
    prompt = resolved.system_prompt.value
    if len(prompt) > SHOWN_PROMPT_CHARS:
        prompt = prompt[:SHOWN_PROMPT_CHARS] + "…"
    return "\n".join(
        (
            f"Models: {resolved.models.value} ({resolved.models.source})",
            f"Answers every message: {'yes' if resolved.autoreply.value else 'no'}"
            f" ({resolved.autoreply.source})",
            f"Limits: {_limits(resolved.cooldown_ms.value, resolved.daily_tokens.value)}"
            f" ({_sources(resolved.cooldown_ms.source, resolved.daily_tokens.source)})",
            f"System prompt ({resolved.system_prompt.source}):",
            "\n".join(f"> {line}" for line in prompt.splitlines() or [""]),
        )
    )


def _sources(*sources: Source) -> str:
    return "; ".join(dict.fromkeys(sources))


def _limits(cooldown_ms: int, daily_tokens: int) -> str:
    cooldown = f"{cooldown_ms} ms" if cooldown_ms else "off"
    tokens = f"{daily_tokens}" if daily_tokens else "off"
    return f"cooldown {cooldown}, daily tokens per user {tokens}"


def _store(service: TomoriService) -> OverrideStore:
    store = service.config.store
    if store is None:
        raise RuntimeError("the service is not started")
    return store


def _keys(where: Where) -> tuple[str, str]:
    return str(where.guild_id), str(where.channel_id)


def _scope(scope: str) -> Scope:
    """The scope option's value; Discord offers only the two, but is not trusted to."""
    return choice(Scope)("scope", scope)


def _scope_name(scope: str) -> str:
    return "this server" if _scope(scope) is Scope.SERVER else "this channel"


def _done(description: str) -> Notice:
    return Notice("Tomori Settings", description, NoticeColour.SUCCESS)


def _refused(description: str) -> Notice:
    return Notice("Not Changed", description, NoticeColour.ERROR)


def _has_permissions(channel: Any) -> bool:
    """Whether the library knows the channel well enough to read the bot's permissions in it."""
    return channel is not None and hasattr(channel, "permissions_for")
