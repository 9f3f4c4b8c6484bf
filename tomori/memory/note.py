"""The request-only note a turn's model is shown its memories in, before the conversation.

It names each memory's id (the `forget` tool takes it) and what it is about, as the speaker
sees it: the person being answered, the server, itself, or the conversation. The memories come
most relevant first, then the newest, one a line: a small model's budget cuts the note from
its last line (`ContextItem.note`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tomori.memory.scopes import Scope
from tomori.memory.store import Memory
from tomori.providers.base import ContextItem, Role

HEADER = (
    "[Note from the bot, not part of the conversation: what you remember here, saved with the"
    " remember tool; forget one with the forget tool and its number]"
)


def about(memory: Memory) -> str:
    if memory.scope is Scope.DM:
        return "this conversation"
    if memory.scope is Scope.SERVER:
        return "this server"
    if memory.scope is Scope.PERSONA:
        return "yourself"
    return "the person you are answering"


def memory_note(memories: Sequence[Memory]) -> tuple[ContextItem, ...]:
    """The note on `memories` (most needed first) for a speaker; none when there are none."""
    if not memories:
        return ()
    lines = [f"- #{m.memory_id} (about {about(m)}): {m.text}" for m in memories]
    return (ContextItem(Role.USER, "\n".join([HEADER, *lines]), note=True),)
