"""`/respond`: a turn asked for by command rather than by a message.

It is queued like any turn (the channel's lock, its order, `/kill`), so its trigger carries all
it needs to run after a restart or in another process: who asked, the persona that answers,
what they said (`prompt`) and the prefill that replaces the server's for this answer. Having
no message of its own, it answers the channel as it stands when it runs (its latest message
is where the history ends), free-standing, and then what the asker said, if anything.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tomori.locks import Trigger
from tomori.prompt.prefill import Prefill
from tomori.providers.base import ContextItem, Role
from tomori_cog.discord_io import call_failures
from tomori_cog.library import Library
from tomori_cog.listener.reply_rule import Addressed, Asked
from tomori_cog.pacing import DiscordPacing

log = logging.getLogger(__name__)

KEY = "manual"
"""Where a trigger's payload keeps a manual turn's own parts."""


@dataclass(frozen=True, slots=True)
class Manual:
    """A `/respond` turn's own parts."""

    asker: str
    """The asker's name as the channel shows it, which their prompt is said under."""
    prompt: str | None = None
    prefill: str | None = None
    """Checked (`check_prefill`) before it is queued."""

    def trigger(self, channel_id: int, user_id: int, persona: str | None) -> Trigger:
        """The trigger that queues it; the persona by its name key (None: the bot answers).

        It asks directly (the asker is told of failures) and has no message: nothing to reply
        to, and nothing the lock store could recognise as admitted twice."""
        asked = Asked(Addressed.DIRECTLY, (persona,) if persona else ())
        payload = {
            **asked.payload(),
            KEY: {"asker": self.asker, "prompt": self.prompt, "prefill": self.prefill},
        }
        return Trigger(str(channel_id), None, str(user_id), payload)

    @classmethod
    def of(cls, payload: Mapping[str, Any]) -> Manual | None:
        """A trigger's manual parts; None for a message's trigger."""
        parts = payload.get(KEY)
        if not isinstance(parts, Mapping):
            return None
        return cls(str(parts.get("asker") or ""), parts.get("prompt"), parts.get("prefill"))

    def asking(self, server: Prefill | None) -> Asking:
        """What its answers are asked: what the asker said, and its own prefill, which
        replaces the server's (`server`; never joined to it), else the server's."""
        said = (ContextItem(Role.USER, f"{self.asker}: {self.prompt}"),) if self.prompt else ()
        prefill = Prefill(self.prefill, manual=True) if self.prefill else server
        return Asking(said, prefill)


@dataclass(frozen=True, slots=True)
class Asking:
    """What a turn's answers are asked beyond the channel's messages: what a `/respond` asker
    said, and the prefill the answers begin with (a channel's or server's, or `/respond`'s)."""

    said: tuple[ContextItem, ...] = ()
    prefill: Prefill | None = None

    def prefill_for(self, *, first: bool) -> Prefill | None:
        """The prefill of one answer: a server's begins every persona's; a `/respond` one
        was given for the persona asked for, so only the first answer begins with it."""
        if self.prefill is None or first or not self.prefill.manual:
            return self.prefill
        return None


async def latest_message(channel: Any, library: Library, pacing: DiscordPacing) -> Any | None:
    """The channel's newest message, where a manual turn's history ends (None: the channel has
    none, or it cannot be read: the turn answers what the asker said alone)."""
    try:
        await pacing.read()
        async for message in channel.history(limit=1):
            return message
    except call_failures(library) as error:
        log.info("channel %s: its latest message cannot be read: %r", channel.id, error)
    return None
