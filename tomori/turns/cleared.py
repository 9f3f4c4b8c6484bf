"""Who hears that a /kill cleared what they had waiting, and how: each member once, in a
bounded number of notices.

What another's /kill cleared (the locks leave the killer's own out: they know) is told to each
member who asked directly (a mention, a reply, a command); a message the channel would have
answered on its own (autoreply) goes silently, as one dropped for age does. Up to
`REPLIED_AT_MOST` members are each told by a reply to their newest cleared message, which pings
no one; more, or one whose only cleared ask had no message (a /scene, a /respond), and a single
notice names them all. So one /kill posts at most `REPLIED_AT_MOST` notices, whoever it cleared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tomori.locks import Trigger
from tomori.turns.request import TurnRequest

REPLIED_AT_MOST = 3


@dataclass(frozen=True, slots=True)
class ClearedAskers:
    """How the members one /kill cleared are told: by replies, or named in one notice."""

    replied: tuple[str, ...] = ()
    """Each member's newest cleared message, to reply to: one notice each."""
    named: tuple[str, ...] = ()
    """The members' IDs, to name in one notice."""


def cleared_askers(cleared: Sequence[Trigger]) -> ClearedAskers:
    """Who of those whose triggers a /kill cleared (oldest first, as they were queued) is
    told, and how (see the module)."""
    asked: dict[str, list[Trigger]] = {}
    for trigger in cleared:
        if trigger.requester_id is not None and TurnRequest.of(trigger).surfaces_errors:
            asked.setdefault(trigger.requester_id, []).append(trigger)
    newest = [_newest_message(triggers) for triggers in asked.values()]
    replied = tuple(message for message in newest if message is not None)
    if len(replied) == len(asked) <= REPLIED_AT_MOST:
        return ClearedAskers(replied=replied)
    return ClearedAskers(named=tuple(asked))


def _newest_message(triggers: Sequence[Trigger]) -> str | None:
    """The latest of one member's cleared messages (IDs order messages by time: Discord's
    snowflakes, the console's count); None if none of their asks had one."""
    messages = [int(trigger.message_id) for trigger in triggers if trigger.message_id is not None]
    return str(max(messages)) if messages else None
