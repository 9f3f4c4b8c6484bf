"""`/respond` in both libraries: queue a manual turn and say so at once.

The interaction is answered as soon as the turn is queued (ephemerally, as `/tomori` is), never
after the answer: the answer itself comes in the channel, in its turn, under the channel's lock
(a `tomori.turns.Respond` rides in its trigger, across restarts). Like `/tomori`, it is for
members with Manage Server by default (a prefill is posted as the answer's first words, so it
lets its user put words in the bot's mouth); each server can widen or narrow that in its
integration settings. Whoever runs it is held to the limits a message is (`command_held`):
the author's ceilings hold for admins too.
"""

from __future__ import annotations

import logging
from typing import Any

from tomori.delivery.notices import QUEUE_FULL, Notice, NoticeColour
from tomori.locks import Admission
from tomori.policy.admin import refused
from tomori.turns.commanded import respond_asked
from tomori.words import said
from tomori_cog.chat import TomoriChat
from tomori_cog.cogs.shared import reply_in_time
from tomori_cog.library import Library

log = logging.getLogger(__name__)

QUEUED = Notice.of(said("title.answering"), said("respond.queued"), NoticeColour.SUCCESS)
NOT_QUEUED = Notice.of(said("title.not_answered"), said("respond.not_queued"), NoticeColour.ERROR)


async def respond(
    library: Library,
    chat: TomoriChat,
    interaction: Any,
    persona: str | None,
    prompt: str | None,
    prefill: str | None,
) -> None:
    """Queue the turn `/respond` asks for and tell its user, ephemerally."""
    queued = _queued(chat, interaction, persona, prompt, prefill)
    await reply_in_time(library, interaction, queued, "/respond")


async def _queued(
    chat: TomoriChat,
    interaction: Any,
    persona: str | None,
    prompt: str | None,
    prefill: str | None,
) -> Notice:
    if interaction.guild_id is None or interaction.channel_id is None:
        return refused(said("respond.servers_only"))
    try:
        runtime = await chat.ensure_started()
        user = interaction.user
        asked = await respond_asked(
            runtime.personas, str(interaction.guild_id), user.display_name, persona, prompt, prefill
        )
        if isinstance(asked, Notice):
            return asked
        held = await chat.command_held(interaction.guild_id, user.id, interaction.id)
        if held is not None:
            return held
        # No message: nothing to reply to, and nothing the lock store could recognise as
        # admitted twice.
        trigger = asked.trigger(str(interaction.channel_id), None, str(user.id))
        admission = await runtime.locks.submit(trigger)
    except Exception:
        log.exception("/respond failed in channel %s", interaction.channel_id)
        return NOT_QUEUED
    channel_id, user_id = interaction.channel_id, interaction.user.id
    log.info("/respond in channel %s by user %s: %s", channel_id, user_id, admission)
    if admission is Admission.QUEUE_FULL:
        return QUEUE_FULL
    return QUEUED if admission in (Admission.STARTED, Admission.QUEUED) else NOT_QUEUED
