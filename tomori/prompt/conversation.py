"""The order a channel's messages are shown to the model in, whatever the channel is.

The cog's Discord channels and the terminal console share it, so a console session is shown
the conversation exactly as a channel would be.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any


def in_time_order(
    recent: Iterable[Any], earlier: Iterable[Any], trigger: Any, waiting: Collection[str]
) -> list[Any]:
    """The messages the model is shown: each once, oldest first, the trigger last.

    `earlier` (a reply chain, a thread's starter, the answers the bot posted while the
    trigger waited in the queue) may repeat messages of `recent` or the trigger itself; a
    message is shown once whichever way it was found. An answer posted after the trigger is
    still shown before it: it answers what came before, and the trigger is what is asked now.
    `waiting` are the IDs of messages still queued for a turn of their own: each is answered
    with its own context, so none is shown ahead of its turn. Snowflake IDs order messages by
    time.
    """
    before: dict[int, Any] = {}
    for message in [*recent, *earlier]:
        if message.id != trigger.id and str(message.id) not in waiting:
            before.setdefault(message.id, message)
    return [*sorted(before.values(), key=lambda message: message.id), trigger]
