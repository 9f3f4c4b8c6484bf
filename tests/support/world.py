"""The one guild both libraries' test bots live in: the same IDs and names on each.

A test written once for both libraries names channels, members and the guild by these values,
in its settings, its SQL and what it expects the model to be shown; each fake builds the guild
from them (tests/support/nextcord_fake.py from gateway payloads, tests/support/dpy.py through
dpytest's backend).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

BOT_ID = 1_000_000_000_000_000_001
GUILD_ID = 2_000_000_000_000_000_002
CHANNEL_ID = 4_000_000_000_000_000_004
CHANNEL_IDS = (CHANNEL_ID, CHANNEL_ID + 1, CHANNEL_ID + 2)
"""The guild's text channels, `CHANNEL_ID` first: the one a test talks in unless it says."""
ALICE = 3_000_000_000_000_000_003
BOB = 3_000_000_000_000_000_033
READ_AND_SEND = (1 << 10) | (1 << 11) | (1 << 14) | (1 << 16) | (1 << 38)
"""View, send, embed links, read history, send in threads: what @everyone has by default."""


class Person(Enum):
    """Who writes in the guild: its members, two other bots, and the bot under test itself."""

    ALICE = (ALICE, "alice", False)
    BOB = (BOB, "bob", False)
    OTHER_BOT = (5_000_000_000_000_000_005, "otherbot", True)
    CI_BOT = (5_000_000_000_000_000_055, "ci-bot", True)
    TOMORI = (BOT_ID, "Tomori", True)

    def __init__(self, user_id: int, username: str, is_bot: bool) -> None:
        self.id = user_id
        self.username = username
        self.is_bot = is_bot


def channel_denying_the_bot(permission: int, channel_id: int = CHANNEL_ID) -> dict[str, Any]:
    """CHANNEL_UPDATE's data when an admin denies the bot `permission` in the channel."""
    return {
        "id": str(channel_id),
        "type": 0,
        "guild_id": str(GUILD_ID),
        "name": f"channel-{CHANNEL_IDS.index(channel_id)}",
        "position": CHANNEL_IDS.index(channel_id),
        "permission_overwrites": [
            {"id": str(BOT_ID), "type": 1, "allow": "0", "deny": str(permission)}
        ],
    }


MANAGE_WEBHOOKS = 1 << 29
MANAGE_GUILD = 1 << 5
"""Manage Server: who may run `/tomori` and `/respond` by default."""


def channel_allowing_the_bot(permission: int, channel_id: int = CHANNEL_ID) -> dict[str, Any]:
    """CHANNEL_UPDATE's data when an admin gives the bot `permission` in the channel."""
    return {
        **channel_denying_the_bot(0, channel_id),
        "permission_overwrites": [
            {"id": str(BOT_ID), "type": 1, "allow": str(permission), "deny": "0"}
        ],
    }


def bot_timed_out_for_an_hour() -> dict[str, Any]:
    """GUILD_MEMBER_UPDATE's data when a moderator times the bot out."""
    return {
        "guild_id": str(GUILD_ID),
        "user": {
            "id": str(BOT_ID),
            "username": "Tomori",
            "discriminator": "0",
            "avatar": None,
            "global_name": None,
            "bot": True,
        },
        "roles": [],
        "nick": None,
        "joined_at": "2024-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
        "communication_disabled_until": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
    }
