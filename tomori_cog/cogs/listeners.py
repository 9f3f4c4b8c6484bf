"""The gateway events both libraries' cogs listen to, written once.

nextcord is discord.py's fork and both mark a cog's listeners alike (`commands.Cog.listener()`
sets `__cog_listener__` and `__cog_listener_names__` on the method, and each library's cog
class collects the marked methods of every base): `listens` marks them here the same way, so
one mixin serves both cog classes without importing either library. The tests that edit,
delete and reconnect run on both libraries.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from tomori_cog.chat import TomoriChat
from tomori_cog.library import Library
from tomori_cog.reading import gateway

Listener = Callable[..., Coroutine[Any, Any, None]]


def listens[L: Listener](method: L) -> L:
    """Mark `method` as the cog's listener for the event it is named after."""
    method.__cog_listener__ = True  # type: ignore[attr-defined]
    method.__cog_listener_names__ = [method.__name__]  # type: ignore[attr-defined]
    return method


class GatewayListeners:
    """Messages to answer, and what keeps recent messages and queued triggers honest
    (`tomori_cog/reading/gateway.py`)."""

    chat: TomoriChat
    library: Library

    @listens
    async def on_ready(self) -> None:
        memory, guilds = self.chat.memory, self.chat.bot.guilds
        gateway.fresh_from_discord(memory, guilds, "new gateway session")
        await self.chat.ensure_started()

    @listens
    async def on_message(self, message: Any) -> None:
        await self.chat.intake.handle_message(message)

    @listens
    async def on_interaction(self, interaction: Any) -> None:
        """A press of a tool call's confirmation button, an answer's Stop button, or its take
        buttons (the commands have their own)."""
        await self.chat.confirmations.pressed(interaction)
        await self.chat.stop_buttons.pressed(interaction)
        await self.chat.takes.pressed(interaction)

    @listens
    async def on_raw_message_edit(self, payload: Any) -> None:
        gateway.message_edited(self.chat.memory, self.library, payload)
        self.chat.intake.messages_changed((payload.message_id,))

    @listens
    async def on_raw_message_delete(self, payload: Any) -> None:
        gateway.message_deleted(self.chat.memory, payload)
        self.chat.intake.messages_deleted((payload.message_id,))
        self.chat.messages_deleted(payload.channel_id, (payload.message_id,))

    @listens
    async def on_raw_bulk_message_delete(self, payload: Any) -> None:
        gateway.messages_deleted(self.chat.memory, payload)
        self.chat.intake.messages_deleted(payload.message_ids)
        self.chat.messages_deleted(payload.channel_id, payload.message_ids)

    @listens
    async def on_disconnect(self) -> None:
        gateway.unsure(self.chat.memory, "gateway disconnected")

    @listens
    async def on_resumed(self) -> None:
        gateway.unsure(self.chat.memory, "gateway resumed")

    @listens
    async def on_shard_ready(self, shard_id: int) -> None:
        guilds = [g for g in self.chat.bot.guilds if g.shard_id == shard_id]
        gateway.fresh_from_discord(self.chat.memory, guilds, f"shard {shard_id} ready")

    @listens
    async def on_guild_channel_update(self, before: Any, after: Any) -> None:
        gateway.channel_changed(self.chat.memory, before, after)

    @listens
    async def on_guild_channel_delete(self, channel: Any) -> None:
        await self.chat.webhooks.channels_gone([channel.id])

    @listens
    async def on_guild_remove(self, guild: Any) -> None:
        """The bot left the server (kicked, or the server deleted): its channels are gone to it."""
        await self.chat.webhooks.channels_gone([channel.id for channel in guild.channels])

    @listens
    async def on_guild_role_update(self, before: Any, after: Any) -> None:
        gateway.unsure(self.chat.memory, f"role {after.id} changed")

    @listens
    async def on_member_update(self, before: Any, after: Any) -> None:
        gateway.member_changed(self.chat.memory, after)

    @listens
    async def on_guild_join(self, guild: Any) -> None:
        gateway.fresh_from_discord(self.chat.memory, [guild], f"joined server {guild.id}")

    @listens
    async def on_guild_available(self, guild: Any) -> None:
        gateway.fresh_from_discord(self.chat.memory, [guild], f"server {guild.id} available")

    @listens
    async def on_thread_join(self, thread: Any) -> None:
        gateway.thread_joined(self.chat.memory, thread)
