"""The built-in `read_message` tool: a channel message, by link or ID, that the bot can read.

It only reads within the server the question was asked in, and only channels the person who
asked can read themselves, so the tool cannot be used to see what a user could not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tomori.config.settings import READ_MESSAGE_NAME
from tomori.providers.base import JsonObject
from tomori.tools.registry import Tool, ToolContext, ToolFailure
from tomori_cog.discord_io import call_failures
from tomori_cog.library import Library

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
        there = bot.get_channel(channel_id)
        if there is None or getattr(there, "guild", None) != getattr(here, "guild", None):
            raise ToolFailure("that message is not in a channel of this server the bot can see")
        guild = getattr(there, "guild", None)
        if guild is not None:
            member = guild.get_member(int(context.requester_id or 0))
            if member is None or not there.permissions_for(member).read_message_history:
                raise ToolFailure("the person asking cannot read that channel")
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

    return Tool(
        name=READ_MESSAGE_NAME,
        description="Read a Discord message of this server, given its link or its ID "
        "(an ID means a message in the current channel).",
        parameters={
            "type": "object",
            "properties": {"reference": {"type": "string", "description": "a link or an ID"}},
            "required": ["reference"],
        },
        run=read_message,
    )
