"""The built-in `read_message` tool: a channel message, by link or ID, that everyone there could
read.

What the tool reads is posted where the question was asked, so it may read only what everyone
who can see that channel could read themselves, whoever asks and whatever a message the model
read told it to fetch: a message of the current channel (or, in a direct message, of that
conversation only), or of a channel of the same server that its @everyone role can read; never
a private thread other than the one asked in, never a channel only some can see (a moderator's
question, or a note planted for one, cannot carry a staff channel into a public one). The
person asking must be able to read it too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tomori.config.settings import READ_MESSAGE_NAME
from tomori.providers.base import JsonObject, ToolSpec
from tomori.tools.registry import Tool, ToolContext, ToolFailure
from tomori_cog.discord_io import call_failures
from tomori_cog.library import Library
from tomori_cog.reading.audience import everyone_reads, private_thread

READ_MESSAGE = ToolSpec(
    READ_MESSAGE_NAME,
    "Read a Discord message everyone in this channel could read, given its link or its ID (an "
    "ID means a message in the current channel).",
    {
        "type": "object",
        "properties": {"reference": {"type": "string", "description": "a link or an ID"}},
        "required": ["reference"],
    },
)
"""What the model is offered (`--check` offers it too, with no bot to read with)."""
LINK = re.compile(r"discord(?:app)?\.com/channels/(?:\d+|@me)/(\d+)/(\d+)")
MAX_CONTENT = 4_000


def message_lookup_tool(bot: Any, library: Library) -> Tool:
    async def read_message(context: ToolContext, arguments: Mapping[str, Any]) -> JsonObject:
        reference = str(arguments.get("reference", "")).strip()
        link = LINK.search(reference)
        if link is not None:
            channel_id, message_id = int(link.group(1)), int(link.group(2))
        elif reference.isdigit():
            channel_id, message_id = int(context.channel_id), int(reference)
        else:
            raise ToolFailure("give a message link (https://discord.com/channels/...) or an ID")
        here = bot.get_channel(int(context.channel_id))
        there = here if channel_id == int(context.channel_id) else bot.get_channel(channel_id)
        if here is None or there is None:
            raise ToolFailure("that message is not in a channel the bot can see")
        refusal = _audience_refusal(library, here, there, context.requester_id)
        if refusal is not None:
            raise ToolFailure(refusal)
        try:
            message = await there.fetch_message(message_id)
        except call_failures(library):
            raise ToolFailure("the bot cannot read that message (deleted, or no access)") from None
        return {
            "author": message.author.display_name,
            "content": (message.content or "")[:MAX_CONTENT],
            "sent_at": message.created_at.isoformat(),
            "channel": getattr(there, "name", "direct messages"),
        }

    return Tool(READ_MESSAGE.name, READ_MESSAGE.description, READ_MESSAGE.parameters, read_message)


def _audience_refusal(library: Library, here: Any, there: Any, asker: str | None) -> str | None:
    """Why `there` may not be read into `here` for `asker` (see the module docstring)."""
    guild = getattr(here, "guild", None)
    if guild is None:
        return None if there is here else "in a direct message, only its own messages are read"
    if getattr(there, "guild", None) != guild:
        return "that message is not in a channel of this server the bot can see"
    member = guild.get_member(int(asker or 0))
    if member is None or not there.permissions_for(member).read_message_history:
        return "the person asking cannot read that channel"
    if there is here:
        return None
    if private_thread(library, there):
        return "that message is in a private thread, which not everyone here can read"
    if not everyone_reads(library, there):
        return "that channel is not one everyone in this server can read"
    return None
