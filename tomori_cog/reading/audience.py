"""Who can read a channel: the one rule for "everyone in this server can read it".

What is read from a channel only some can see (a staff channel, a private thread) may not be
carried where everyone reads the answers: `read_message` reads into a channel only what
everyone there could read, and memories (shown in every channel of the server) are not saved
from a channel only some can read. A direct message is its own conversation's alone.
"""

from __future__ import annotations

from typing import Any

from tomori_cog.library import Library


def private_thread(library: Library, channel: Any) -> bool:
    return bool(getattr(channel, "type", None) == library.module.ChannelType.private_thread)


def everyone_reads(library: Library, channel: Any) -> bool:
    """Whether every member of the channel's server may read it and its history (a direct
    message: yes, it is that conversation's alone)."""
    guild = getattr(channel, "guild", None)
    if guild is None:
        return True
    if private_thread(library, channel):
        return False
    everyone = channel.permissions_for(guild.default_role)
    return bool(everyone.view_channel and everyone.read_message_history)
