"""Whether the bot could answer a message now: what `/readyz` asks of a bot with the cog.

Ready is the gateway connected (every shard's connection, for a sharded bot) and the cog's
database answering a cheap query. The libraries keep `is_ready()` true across a reconnect, so
the connection itself is asked: an open websocket. A cog not started yet (no first message,
no connection) has no database to ask, and is not ready either.
"""

from __future__ import annotations

from typing import Any

from tomori.monitoring.serving import database_answers
from tomori_cog.cogs.shared import COG_NAME

__all__ = ["bot_readiness", "gateway_connected"]


def gateway_connected(bot: Any) -> bool:
    """Whether every gateway connection of `bot` (a nextcord or discord.py client) is open."""
    if bot.is_closed() or not bot.is_ready():
        return False
    shards = getattr(bot, "shards", None)  # an AutoShardedBot's {id: ShardInfo}
    if shards:
        return not any(shard.is_closed() for shard in shards.values())
    ws = getattr(bot, "ws", None)
    return ws is not None and bool(ws.open)


async def bot_readiness(bot: Any) -> str | None:
    """None if `bot` is ready to answer (see the module docstring); else why not."""
    if not gateway_connected(bot):
        return "the gateway is not connected"
    cog = bot.get_cog(COG_NAME)
    if cog is None or not cog.chat.started:
        return "the cog has not started"
    return await database_answers(cog.chat.runtime.database)
