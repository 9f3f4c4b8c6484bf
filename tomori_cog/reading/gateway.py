"""What the gateway tells the cog's memory of recent messages, whichever library reads it.

Both libraries' cogs forward the same events here (`memory.RecentMessages` says why each one
matters): edits and deletes keep remembered messages as Discord shows them; a disconnect, a
resume, a new session, joining a server or a thread, a server back from an outage, or a change
of what the bot may see makes memory forget, since messages may have been sent that the gateway
never delivered. A new session or a server sent whole also shows which channels never had a
message: memory holds those whole from the start. The raw events are used because they come
whether or not the library still caches the message.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from tomori_cog.library import Library
from tomori_cog.reading.memory import RecentMessages

log = logging.getLogger(__name__)


def message_edited(memory: RecentMessages, library: Library, payload: Any) -> None:
    """`on_raw_message_edit`: the remembered message becomes its new version."""

    def rebuild(held: Any) -> Any | None:
        updated = getattr(payload, "message", None)  # discord.py 2.5 and later build it
        if updated is not None:
            return updated
        try:  # as the library builds it from the same payload (Discord sends the whole message)
            return library.module.Message(
                state=held._state, channel=held.channel, data=payload.data
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            log.info(
                "edit of message %s not applied (%r): its channel is read again",
                payload.message_id,
                error,
            )
            return None

    memory.edited(payload.channel_id, payload.message_id, rebuild)


def message_deleted(memory: RecentMessages, payload: Any) -> None:
    """`on_raw_message_delete`."""
    memory.deleted(payload.channel_id, (payload.message_id,))


def messages_deleted(memory: RecentMessages, payload: Any) -> None:
    """`on_raw_bulk_message_delete`."""
    memory.deleted(payload.channel_id, payload.message_ids)


def unsure(memory: RecentMessages, why: str) -> None:
    """A disconnect, a resume, a (shard's) new session, a role changed: messages may have been
    sent that the bot never saw, so every channel is read from Discord again."""
    log.debug("%s: recent messages are read from Discord again", why)
    memory.forget_all()


def fresh_from_discord(memory: RecentMessages, guilds: Iterable[Any], why: str) -> None:
    """`on_ready`, `on_shard_ready`, `on_guild_join`, `on_guild_available`: as `unsure`; and
    Discord has just sent these servers whole, so a channel shown with no last message has
    none (a message since would have come as an event and set it): memory holds it whole.
    Only here: elsewhere the library's copy may be stale (the bot could not see a channel for
    a while, or the gateway was away)."""
    unsure(memory, why)
    memory.never_written(
        channel.id
        for guild in guilds
        for channel in (*guild.channels, *guild.threads)
        if hasattr(channel, "last_message_id") and channel.last_message_id is None
    )


def channel_changed(memory: RecentMessages, before: Any, after: Any) -> None:
    """`on_guild_channel_update`: if its permissions changed, the bot may have been unable to
    see the channel, or its threads, for a while."""
    if before.overwrites != after.overwrites:
        unsure(memory, f"permissions of channel {after.id} changed")


def member_changed(memory: RecentMessages, after: Any) -> None:
    """`on_member_update`: the bot's own roles may let it see other channels than before."""
    me = after.guild.me
    if me is not None and after.id == me.id:
        unsure(memory, "the bot's member changed")


def thread_joined(memory: RecentMessages, thread: Any) -> None:
    """`on_thread_join`: the bot joined a thread (again, perhaps: it saw nothing while out)."""
    memory.forget(thread.id)
