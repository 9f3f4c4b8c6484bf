"""The gateway payloads of a thread and a forum as Discord sends them and a reply's quoted
message, which both fakes of tests/support/bots.py parse, and what the model was shown."""

from __future__ import annotations

import copy
import re
from typing import Any

from tests.support.llm_server import LLMServer
from tests.support.world import Person

SPEAKER_LINE = re.compile(
    "^(?=(?:" + "|".join(re.escape(person.username) for person in Person) + "): )", re.M
)
"""The start of a line that names one of the guild's people as its speaker."""


def turns(server: LLMServer, request: int = 0) -> list[dict[str, Any]]:
    """The turns the model was sent after the system prompt, as the provider received them."""
    messages = server.requests[request].body["messages"]
    assert messages[0]["role"] == "system"
    return list(messages[1:])


def shown(server: LLMServer, request: int = 0) -> list[str]:
    """What the model was sent after the system prompt: each Discord message's text, in order.

    The model is sent consecutive messages of one role as one turn; a user turn is split back
    here at each line that names a speaker, so a test can state the messages one by one.
    """
    texts: list[str] = []
    for turn in turns(server, request):
        content = turn["content"]
        if turn["role"] == "user" and isinstance(content, str):
            texts += [part for part in SPEAKER_LINE.split(content) if part]
        else:
            texts.append(content)
    return [text.removesuffix("\n") if isinstance(text, str) else text for text in texts]


def quoted(payload: dict[str, Any]) -> dict[str, Any]:
    """A message as Discord sends it inside a reply: without the message it replies to."""
    copied = copy.deepcopy(payload)
    copied.pop("referenced_message", None)
    return copied


def thread_payload(
    thread_id: int, guild_id: int, parent_id: int, owner_id: int, *, private: bool = False
) -> dict[str, Any]:
    """THREAD_CREATE's data, as the gateway announces a thread (or a forum post); a `private`
    one is seen only by its members (and moderators), whatever its parent's permissions."""
    return {
        "id": str(thread_id),
        "guild_id": str(guild_id),
        "parent_id": str(parent_id),
        "owner_id": str(owner_id),
        "name": "a thread",
        "type": 12 if private else 11,  # a private thread, or a public one
        "last_message_id": None,
        "message_count": 0,
        "member_count": 1,
        "total_message_sent": 0,
        "rate_limit_per_user": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": "2024-01-01T00:00:00+00:00",
            "locked": False,
        },
        "newly_created": True,
    }


def staff_channel_payload(channel_id: int, guild_id: int, *can_see: int) -> dict[str, Any]:
    """CHANNEL_CREATE's data for a text channel @everyone cannot see (its overwrite denies
    View Channel), which the members `can_see` can (the bot, a moderator): what a server's
    moderators talk in."""
    view_and_read = (1 << 10) | (1 << 16)
    return {
        "id": str(channel_id),
        "type": 0,
        "guild_id": str(guild_id),
        "name": "staff",
        "position": 8,
        "permission_overwrites": [
            {"id": str(guild_id), "type": 0, "allow": "0", "deny": str(1 << 10)},
            *(
                {"id": str(member), "type": 1, "allow": str(view_and_read), "deny": "0"}
                for member in can_see
            ),
        ],
    }


def forum_payload(forum_id: int, guild_id: int) -> dict[str, Any]:
    """CHANNEL_CREATE's data for a forum channel."""
    return {
        "id": str(forum_id),
        "type": 15,  # forum
        "guild_id": str(guild_id),
        "name": "help",
        "position": 9,
        "permission_overwrites": [],
        "available_tags": [],
        "flags": 0,
    }
