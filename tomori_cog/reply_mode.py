"""Which messages the cog answers, and whether it tells the author when something went wrong."""

from __future__ import annotations

from typing import Any

from tomori.config import Settings
from tomori_cog.library import Library


def reply_mode(bot: Any, library: Library, settings: Settings, message: Any) -> bool | None:
    """None to ignore the message; else whether errors are shown (direct triggers)."""
    me = bot.user
    author = message.author
    if me is None or author.id == me.id:
        return None
    if from_bot(message) and not settings.reply_to_bots:
        return None
    types = library.module.MessageType
    if message.type not in (types.default, types.reply):
        return None
    text = (message.content or "").strip()
    if (not text and not message.attachments) or text.startswith("!"):
        return None
    if message.guild is None or any(user.id == me.id for user in message.mentions):
        return True
    replied = message.reference.resolved if message.reference is not None else None
    if getattr(getattr(replied, "author", None), "id", None) == me.id:
        return True
    if message.channel.id in settings.channels:
        return False
    return None


def from_bot(message: Any) -> bool:
    """Whether a bot or a webhook wrote the message."""
    return bool(message.author.bot or message.webhook_id)
