"""`/tomori` subcommands run the way Discord delivers them, in both libraries' test bots.

An interaction's `data` for a subcommand nests it as the group's one option, with its own
options inside, each typed as Discord types them (string 3, integer 4, boolean 5).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from typing import Any

from tests.support.dpy import DpyBot
from tests.support.nextcord_fake import CHANNEL_ID, NextcordBot
from tests.support.world import MANAGE_GUILD as MANAGE_GUILD

_ids = itertools.count(800_000_000_000_000_000)
_TYPES = {str: 3, int: 4, bool: 5}


def command_data(subcommand: str, *, top: str = "tomori", **options: Any) -> dict[str, Any]:
    """`/<top> <subcommand>`'s data; a subcommand of a group (`memory list`) is nested in the
    group's option (type 2), as Discord nests it."""
    given = [
        {"name": name, "type": _TYPES[type(value)], "value": value}
        for name, value in options.items()
    ]
    *groups, name = subcommand.split()
    nested: dict[str, Any] = {"name": name, "type": 1, "options": given}
    for group in reversed(groups):
        nested = {"name": group, "type": 2, "options": [nested]}
    return {"id": str(next(_ids)), "name": top, "type": 1, "options": [nested]}


async def nextcord_tomori(
    nc: NextcordBot,
    subcommand: str,
    *,
    channel: int = CHANNEL_ID,
    top: str = "tomori",
    user: tuple[int, str] | None = None,
    permissions: int = MANAGE_GUILD,
    **options: Any,
) -> dict[str, Any]:
    """`/<top> <subcommand>` by a member with Manage Server (or `user`, an id and a name,
    with `permissions`); return what was answered."""
    payload = nc.kill_payload(permissions=permissions, channel=channel)
    if user is not None:
        payload = nc.kill_payload(
            user=user[0], name=user[1], permissions=permissions, channel=channel
        )
    payload["data"] = command_data(subcommand, top=top, **options)
    before = len(nc.discord.interaction_replies)
    nc.bot._connection.parse_interaction_create(copy.deepcopy(payload))
    async with asyncio.timeout(5):
        while len(nc.discord.interaction_replies) == before:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
    return nc.discord.interaction_replies[-1]


async def dpy_tomori(
    dpy: DpyBot,
    subcommand: str,
    *,
    channel: int = CHANNEL_ID,
    top: str = "tomori",
    member: Any = None,
    permissions: int = MANAGE_GUILD,
    **options: Any,
) -> dict[str, Any]:
    """`/<top> <subcommand>` by a member with Manage Server (or `member` with `permissions`);
    return what was answered."""
    data = command_data(subcommand, top=top, **options)
    return await dpy.run_command(data, member, permissions=permissions, channel_id=channel)


def said(reply: dict[str, Any]) -> tuple[str, str]:
    """The (title, description) of an ephemeral reply's embed; asserts it was ephemeral."""
    assert reply["data"]["flags"] & 64
    embed = reply["data"]["embeds"][0]
    return embed["title"], embed.get("description", "")
