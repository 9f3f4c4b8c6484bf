"""`/tomori` in both libraries: the table's actions (`tomori.commands.table`), answered to Discord.

The cogs only declare the commands and forward the options given; `run` builds the
subcommand's action from them and answers ephemerally, deferring if the database is slow (see
`reply_in_time`). Who may run them is Discord's to decide: the group is guild-only, and
visible by default to members with Manage Server, which each server can widen or narrow.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from tomori.cast.personas import PersonaStore
from tomori.commands import table
from tomori.config.models import ModelChain, ModelEntry
from tomori.config.settings import Settings
from tomori.delivery.notices import Notice
from tomori.delivery.traffic import TrafficReport
from tomori.generation.contexts import Budget
from tomori.generation.health import Sick
from tomori.memory.store import MemoryStore
from tomori.monitoring.status import ServerStatus, server_status
from tomori.policy.admin import NOT_CHANGED, Action, Where, perform, refused
from tomori.policy.override_store import OverrideStore
from tomori.policy.overrides import Defaults
from tomori.tools.switches import ToolCatalog, ToolSwitchStore
from tomori.words import said
from tomori_cog.chat import TomoriChat
from tomori_cog.cogs.shared import reply_in_time
from tomori_cog.library import Library
from tomori_cog.listener.deliverability import missing_permissions
from tomori_cog.runtime import Runtime

log = logging.getLogger(__name__)


async def run(
    library: Library, chat: TomoriChat, interaction: Any, name: str, given: dict[str, Any]
) -> None:
    """Run the subcommand `name` with the options `given` (None: left out; a file: its URL)
    and answer the interaction with what its action says, ephemerally."""
    command = table.command(name)
    options = {
        option.name: _value(option, given[option.name])
        for option in command.options
        if given.get(option.name) is not None
    }
    outcome = _outcome(library, chat, interaction, table.action(name, options))
    await reply_in_time(library, interaction, outcome, "/tomori")


def _value(option: table.Option, value: Any) -> Any:
    return getattr(value, "url", None) if option.kind is table.OptionKind.FILE else value


async def _outcome(library: Library, chat: TomoriChat, interaction: Any, action: Action) -> Notice:
    if interaction.guild_id is None or interaction.channel_id is None:
        return refused(said("notice.servers_only"))
    channel = interaction.channel
    cannot_post = missing_permissions(library, channel) if _has_permissions(channel) else []
    where = Where(str(interaction.guild_id), str(interaction.channel_id), tuple(cannot_post))
    try:
        runtime = await chat.ensure_started()
    except Exception:
        log.exception("/tomori failed in channel %s", interaction.channel_id)
        return NOT_CHANGED
    notice = await perform(action, ChatSettings(chat, runtime), where)
    log.info(
        "/tomori in channel %s by user %s: %s",
        interaction.channel_id,
        interaction.user.id,
        notice.description.splitlines()[0] if notice.description else notice.title,
    )
    return notice


class ChatSettings:
    """The started chat's settings store, keys, environment and metrics, as the actions use
    them (`tomori.policy.admin.Administered`)."""

    def __init__(self, chat: TomoriChat, runtime: Runtime) -> None:
        self._chat = chat
        self._runtime = runtime

    @property
    def overrides(self) -> OverrideStore:
        store = self._chat.config.store
        if store is None:
            raise RuntimeError("the chat is not started")
        return store

    @property
    def personas(self) -> PersonaStore:
        return self._runtime.personas

    @property
    def bot_name(self) -> str:
        return self._chat.bot_name

    def member_names(self, guild_id: str) -> Iterator[str]:
        guild = self._chat.bot.get_guild(int(guild_id))
        cached = getattr(guild, "members", ())
        return names_of((*cached, *self._chat.memory.authors_in(int(guild_id))))

    def check_models(self, raw: str) -> ModelChain:
        return self._chat.config.check_models(raw)

    def defaults(self, where: Where) -> Defaults:
        return self._chat.config.defaults(int(where.channel_id))

    def context_budget(self, entry: ModelEntry) -> Budget:
        return self._chat.config.contexts.budget(entry)

    @property
    def settings(self) -> Settings:
        return self._chat.config.settings

    async def status(self, guild_id: str) -> ServerStatus:
        await self._runtime.metrics.flushed()
        return await server_status(self._runtime.database, guild_id)

    def skipped(self) -> Sequence[Sick]:
        health = self._runtime.health
        return health.skipped() if health is not None else []

    def traffic(self) -> TrafficReport | None:
        return self._chat.pacing.report()

    @property
    def tool_switches(self) -> ToolSwitchStore:
        return self._runtime.tool_switches

    def tool_catalog(self, guild_id: str) -> ToolCatalog:
        return self._chat.tool_catalog(guild_id)

    @property
    def memories(self) -> MemoryStore | None:
        return self._runtime.memories


def names_of(members: Iterable[Any]) -> Iterator[str]:
    """The nickname, global name and username each of `members` goes by. They are those the
    library has cached of the server (with the members intent, which is privileged, and the
    library's member chunking, its default then, every member; without it, the bot and
    members in voice) and the authors of the messages the cog keeps from the gateway: Discord
    is never asked, however large the server."""
    for member in members:
        for name in (getattr(member, "nick", None), member.global_name, member.name):
            if name:
                yield name


def _has_permissions(channel: Any) -> bool:
    """Whether the library knows the channel well enough to read the bot's permissions in it."""
    return channel is not None and hasattr(channel, "permissions_for")
