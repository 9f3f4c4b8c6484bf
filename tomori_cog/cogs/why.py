""" "Why no answer?" in both libraries: a message's context-menu command (Apps → Why no answer?).

Whoever sent the message (or a moderator) is answered ephemerally, within Discord's 3 s, with
what became of it (`TomoriChat.why`: the account kept in the database, or the reply rule's
reason); anyone else is refused, ephemerally, without learning whether there is an account.
"""

from __future__ import annotations

import logging
from typing import Any

from tomori.delivery.notices import Notice
from tomori.monitoring.why import MENU_NAME, UNREADABLE_NOTICE
from tomori_cog.chat import TomoriChat
from tomori_cog.cogs.shared import reply_in_time
from tomori_cog.library import Library

log = logging.getLogger(__name__)


async def why_no_answer(library: Library, chat: TomoriChat, interaction: Any, message: Any) -> None:
    await reply_in_time(library, interaction, _told(chat, interaction, message), MENU_NAME)


async def _told(chat: TomoriChat, interaction: Any, message: Any) -> Notice:
    manages = bool(interaction.permissions.manage_messages)
    try:
        return await chat.why(message, interaction.user.id, manages)
    except Exception:
        log.exception("could not tell why message %s got no answer", message.id)
        return UNREADABLE_NOTICE
