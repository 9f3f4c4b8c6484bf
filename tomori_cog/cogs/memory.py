"""`/memory` in both libraries: a member's own memories, answered ephemerally (`export` with
its file), anywhere the command is run, a server or a direct message
(`tomori.policy.memories.own`). `/tomori memory` is a `/tomori` subcommand like the rest
(`tomori_cog.cogs.admin`)."""

from __future__ import annotations

import logging
from typing import Any

from tomori.policy.admin import NOT_CHANGED
from tomori.policy.memories import Answer, own
from tomori_cog.chat import TomoriChat
from tomori_cog.cogs.shared import reply_in_time
from tomori_cog.library import Library

log = logging.getLogger(__name__)


async def own_memory(
    library: Library, chat: TomoriChat, interaction: Any, name: str, **given: Any
) -> None:
    """Run `/memory <name>` for the member who ran it."""
    await reply_in_time(library, interaction, _answer(chat, interaction, name, given), "/memory")


async def _answer(chat: TomoriChat, interaction: Any, name: str, given: dict[str, Any]) -> Answer:
    member_id = str(interaction.user.id)
    try:
        runtime = await chat.ensure_started()
        answer = await own(runtime.memories, member_id, name, given)
    except Exception:
        log.exception("/memory %s failed for user %s", name, member_id)
        return Answer(NOT_CHANGED)
    log.info("/memory %s by user %s", name, member_id)  # never the memories' text
    return answer
