"""Whether the bot can post in a channel, checked before a model is asked to write there.

A turn in a channel the bot cannot post in would spend a model call on an answer nobody can
see. Two things tell: the library's permission objects (Send Messages, or Send Messages in
Threads in a thread; Embed Links, which every notice needs; not timed out in the server), read
from the library's cache with no Discord call; and a send Discord refused (403, or the
channel gone), which is remembered for `REFUSED_FOR_S` because the cache may not know why
(a permission overwrite it was not told of). Each channel is logged once per such spell, not
once per message. In memory: a restart asks Discord again, once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tomori.words import Said, said, say
from tomori_cog.library import Library

log = logging.getLogger(__name__)

REFUSED_FOR_S = 600.0


class Deliverability:
    def __init__(self, library: Library, clock: Callable[[], float] = time.monotonic) -> None:
        self._library = library
        self.clock = clock
        """Seconds that only go forward; a test moves it past a spell."""
        self._refused: dict[int, float] = {}
        """Channels Discord refused a send in, until when they are left alone."""
        self._logged: dict[int, float] = {}
        """Channels whose missing permissions were logged, until when that line stands."""

    def allows(self, channel: Any) -> bool:
        """Whether a turn in the channel could post its answer; logs a refusal once a spell."""
        now = self.clock()
        until = self._refused.get(channel.id)
        if until is not None:
            if now < until:
                return False
            del self._refused[channel.id]
        missing = missing_permissions(self._library, channel)
        if not missing:
            self._logged.pop(channel.id, None)
            return True
        if self._logged.get(channel.id, 0.0) <= now:
            self._logged[channel.id] = now + REFUSED_FOR_S
            lacking = "; ".join(say(lack) for lack in missing)
            log.warning("not answering in channel %s: %s", channel.id, lacking)
        return False

    def refused(self, channel_id: int) -> None:
        """Discord refused a send in the channel: leave it alone for `REFUSED_FOR_S`."""
        now = self.clock()
        if self._refused.get(channel_id, 0.0) > now:
            return
        self._forget_past(now)
        self._refused[channel_id] = now + REFUSED_FOR_S
        log.warning(
            "channel %s refused the bot's message; no turns there for %d minutes",
            channel_id,
            REFUSED_FOR_S // 60,
        )

    def _forget_past(self, now: float) -> None:
        """Drop spells that are over, so channels refused once do not stay in memory."""
        for kept in (self._refused, self._logged):
            for channel_id in [key for key, until in kept.items() if until <= now]:
                del kept[channel_id]


def missing_permissions(library: Library, channel: Any) -> list[Said]:
    """What the bot lacks to answer in a server channel, as an admin is told it (`lacking.*`);
    nothing for a DM, or when the library does not know the bot's member (then a refused send
    tells)."""
    guild = getattr(channel, "guild", None)
    me = getattr(guild, "me", None) if guild is not None else None
    if me is None:
        return []
    permissions = channel.permissions_for(me)
    thread = isinstance(channel, library.module.Thread)
    needed = ("send_messages_in_threads" if thread else "send_messages", "embed_links")
    missing = [said(f"lacking.{name}") for name in needed if not getattr(permissions, name)]
    # nextcord calls it communication_disabled_until, discord.py timed_out_until
    until = getattr(me, "communication_disabled_until", None) or getattr(
        me, "timed_out_until", None
    )
    if until is not None and until > datetime.now(UTC):
        missing.append(said("lacking.timed_out"))
    return missing
