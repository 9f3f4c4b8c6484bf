"""Whether the bot could answer a message now: what `/readyz` asks of a bot with the cog.

Ready is the gateway connected (every shard's connection, for a sharded bot) and the cog's
database answering a cheap query. Neither library says when its connection is down: `is_ready()`
stays true across a reconnect, and the old websocket still reads as open while the library
waits to reconnect. Both dispatch the connection's events, though (`connect` on READY,
`resumed`, `disconnect` on every loss and every failed attempt, and the `shard_` ones of a
sharded bot), so `readiness_of` listens to them from before the bot connects. A cog not
started yet has no database to ask, and is not ready either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tomori.monitoring.serving import Readiness, database_answers
from tomori_cog.cogs.shared import COG_NAME

__all__ = ["GatewayWatch", "readiness_of"]


class GatewayWatch:
    """Which of a bot's gateway connections are up, from the library's own events."""

    def __init__(self, bot: Any) -> None:
        self._bot = bot
        self._up: dict[int | None, bool] = {}
        """Shard id (None: the one connection of a bot without shards) -> connected now."""
        if hasattr(bot, "shards"):  # an AutoShardedBot: each shard's own events
            bot.add_listener(self._shard(True), "on_shard_connect")
            bot.add_listener(self._shard(True), "on_shard_resumed")
            bot.add_listener(self._shard(False), "on_shard_disconnect")
        else:
            bot.add_listener(self._whole(True), "on_connect")
            bot.add_listener(self._whole(True), "on_resumed")
            bot.add_listener(self._whole(False), "on_disconnect")

    def _shard(self, up: bool) -> Callable[[int], Any]:
        async def heard(shard_id: int) -> None:
            self._up[shard_id] = up

        return heard

    def _whole(self, up: bool) -> Callable[[], Any]:
        async def heard() -> None:
            self._up[None] = up

        return heard

    @property
    def connected(self) -> bool:
        bot = self._bot
        if bot.is_closed() or not bot.is_ready():
            return False
        shards = getattr(bot, "shards", None)
        expected: list[int | None] = list(shards) if shards else [None]
        return all(self._up.get(key, False) for key in expected)


def readiness_of(bot: Any) -> Readiness:
    """What `/readyz` asks of `bot` (see the module docstring); call it before the bot
    connects, so it hears the connection's first event."""
    gateway = GatewayWatch(bot)

    async def ready() -> str | None:
        if not gateway.connected:
            return "the gateway is not connected"
        cog = bot.get_cog(COG_NAME)
        if cog is None or not cog.chat.started:
            return "the cog has not started"
        return await database_answers(cog.chat.runtime.database)

    return ready
