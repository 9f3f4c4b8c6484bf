"""What fell out of a turn's history window: the messages before it, for the channel summary.

A turn's window is full when it shows `TOMORI_HISTORY_LIMIT` messages of the channel before
its trigger (the reply chain and a thread's starter aside): older messages may then exist,
and the summary (`tomori.summary`) folds them in, read over REST in the background, never on
the answer's path. A window that is not full held the whole channel: nothing fell out.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from tomori.summary.store import Said
from tomori.turns.summaries import Earlier
from tomori_cog.discord_io import call_failures
from tomori_cog.library import Library
from tomori_cog.pacing import DiscordPacing
from tomori_cog.reading.model_view import Shown

log = logging.getLogger(__name__)


def fallen_out(
    library: Library,
    pacing: DiscordPacing,
    channel: Any,
    shown: Shown,
    trigger: Any | None,
    window: int,
) -> Earlier | None:
    """How to read what fell out of the window `shown` (None: nothing did)."""
    bound = None if trigger is None else trigger.id
    recent = [
        message.id
        for message in shown.messages
        if message.id not in shown.kept
        and message.channel.id == channel.id
        and (bound is None or message.id < bound)
    ]
    if len(recent) < window:
        return None
    oldest = library.module.Object(id=min(recent))

    async def earlier(after: str | None, limit: int) -> Sequence[Said]:
        try:
            await pacing.read()
            if after is None:  # the first fold: the window's worth just before it
                read = [m async for m in channel.history(limit=limit, before=oldest)]
                read.reverse()
            else:
                since = library.module.Object(id=int(after))
                read = [m async for m in channel.history(limit=limit, before=oldest, after=since)]
        except call_failures(library) as error:
            log.info(
                "channel %s: what fell out of its window cannot be read: %r", channel.id, error
            )
            return ()
        read.sort(key=lambda message: message.id)
        return [_said(message) for message in read if message.clean_content]

    return earlier


def _said(message: Any) -> Said:
    return Said(
        str(message.id),
        str(message.author.id),
        f"{message.author.display_name}: {message.clean_content}",
    )
