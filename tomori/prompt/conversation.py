"""The order a channel's messages are shown to the model in, which are not, and the turns
they make.

The cog's Discord channels and the terminal console share it, so a console session is shown
the conversation exactly as a channel would be.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from tomori.providers.base import ContextItem


def in_time_order(
    recent: Iterable[Any], earlier: Iterable[Any], trigger: Any | None, waiting: Collection[str]
) -> list[Any]:
    """The messages the model is shown: each once, oldest first, the trigger last (a turn no
    message triggered, a scene, has none: `trigger` None).

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
        if (trigger is None or message.id != trigger.id) and str(message.id) not in waiting:
            before.setdefault(message.id, message)
    shown = sorted(before.values(), key=lambda message: message.id)
    return shown if trigger is None else [*shown, trigger]


class Unshown:
    """Messages the model is never shown, though the channel still holds them, the latest
    `keep`: a stop word that stopped an answer ("stop" read as conversation would tell the
    next answer to stop), and a member's original that a proxy's repost stands for (PluralKit
    reposts before it deletes: shown both, the model reads the member twice, under two names).
    Only this process's: what another process saw is shown as it is."""

    def __init__(self, keep: int = 1_024) -> None:
        self._keep = keep
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, message_id: str) -> None:
        self._ids[message_id] = None
        while len(self._ids) > self._keep:
            self._ids.popitem(last=False)

    def discard(self, message_id: str) -> None:
        self._ids.pop(message_id, None)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids


TURN_JOINER = "\n"


def joined_turns(context: Sequence[ContextItem]) -> tuple[ContextItem, ...]:
    """The context with consecutive items of one role joined into one turn.

    One answer posted as ten Discord messages is one assistant turn, and several people (or
    one person in several messages) talking between two answers are one user turn, each line
    still naming its speaker. Strict chat templates (llama.cpp, vLLM) and providers that want
    the roles to alternate refuse two turns of one role in a row. Images stay with the text
    they came with, in order.
    """
    turns: list[ContextItem] = []
    for item in context:
        if turns and turns[-1].role is item.role:
            last = turns[-1]
            text = TURN_JOINER.join(part for part in (last.text, item.text) if part)
            turns[-1] = ContextItem(item.role, text, (*last.images, *item.images))
        else:
            turns.append(item)
    return tuple(turns)


CONTINUED = "  "
"""What begins each further line of one message in a transcript the model reads."""


LINE_BREAKS = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
"""Every line break Unicode knows (`str.splitlines`'s), \\r\\n as one: a model may read any
of them as a new line."""


def spoken(speaker: str, text: str) -> str:
    """`text` as `speaker` said it, for a transcript the model reads: `speaker: ` first, then
    each further line of it indented (`CONTINUED`), so that a line break inside one message,
    or a file's text, never starts a line that reads as another speaker's ("bob: ...").
    Every kind of line break is written \\n, and none is left in the speaker's name."""
    name = LINE_BREAKS.sub(" ", speaker)
    return f"{name}: " + LINE_BREAKS.sub("\n" + CONTINUED, text)
