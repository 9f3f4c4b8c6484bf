"""`/memory` and `/tomori memory`: what a member does with their own memories, and what a
server's admins do with the server's.

A member's commands work anywhere (a server or a direct message) and act on every memory saved
from their turns (`MemoryStore.of_member`): list (a page at a time), forget one, forget all,
export them as a file, or say no (`off`: nothing more is remembered of them, and what was is
not shown) and yes again. A server's admins list the memories kept in their server (a page at
a time too), forget one, or turn memories off there and on again; each is an `Action` like the
rest of `/tomori` (`perform` runs it). Every answer is ephemeral; a forget removes the rows and
their search entries in one transaction (`tomori.memory.store`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tomori.delivery.notices import Notice, NoticeColour
from tomori.memory.store import Memory, MemoryStore, Refusal
from tomori.policy.admin import Action, Administered, Where, done, refused
from tomori.words import said

SHOWN_CHARS = 3_800
"""How much of a list an answer shows: an embed holds 4,096 characters."""
EXPORT_NAME = "memories.json"


@dataclass(frozen=True, slots=True)
class Answer:
    """What a `/memory` command answers: a notice, and a file (its name and bytes) for
    `export`."""

    notice: Notice
    file: tuple[str, bytes] | None = None


def _told(description: Any) -> Notice:
    return Notice.of(said("title.memories"), description, NoticeColour.SUCCESS)


def listed(memories: Sequence[Memory], *, where: bool, page: int, command: str) -> Notice:
    """Page `page` (from 1) of the list, one line per memory, newest last, each page what an
    embed holds, and under it which page it is and the `command` that shows the next (none
    under a list of one page); `where`: say which server (or direct message) each is kept
    in. A page past the last is refused, saying which is the last."""
    lines = []
    for memory in memories:
        place = ""
        if where:
            place = "DM, " if not memory.guild_id else f"server {memory.guild_id}, "
        lines.append(f"#{memory.memory_id} ({place}{memory.scope.value}): {memory.text}")
    pages = paged(lines, SHOWN_CHARS)
    if page > len(pages):
        return refused(said("memory.no_page", page=page, pages=len(pages)))
    shown = "\n".join(pages[page - 1])
    if len(pages) == 1:
        return _told(shown)
    if page == len(pages):
        return _told(said("memory.page", lines=shown, page=page, pages=len(pages)))
    footer = said(
        "memory.next_page", lines=shown, page=page, pages=len(pages), command=command, next=page + 1
    )
    return _told(footer)


def paged(lines: Sequence[str], most_chars: int) -> list[list[str]]:
    """`lines` in order, in pages of at most `most_chars` each (a line longer than a page is
    cut to it); one empty page for no lines."""
    pages: list[list[str]] = [[]]
    used = 0
    for line in lines:
        if len(line) > most_chars:
            line = line[: most_chars - 1] + "…"
        if pages[-1] and used + len(line) > most_chars:
            pages.append([])
            used = 0
        pages[-1].append(line)
        used += len(line) + 1
    return pages


def exported(memories: Sequence[Memory]) -> bytes:
    """A member's memories as the file `export` gives them: JSON, one object per memory."""
    rows = [
        {
            "id": m.memory_id,
            "scope": m.scope.value,
            "server": m.guild_id or None,
            "about": m.owner_id,
            "text": m.text,
            "saved_at": m.created_at,
        }
        for m in memories
    ]
    return json.dumps({"memories": rows}, ensure_ascii=False, indent=2).encode()


async def own(
    store: MemoryStore | None, member_id: str, name: str, given: Mapping[str, Any]
) -> Answer:
    """The member's `/memory <name>` with the options `given`."""
    if store is None:
        return Answer(_told(said("memory.disabled")))
    if name == "list":
        memories = await store.of_member(member_id)
        if not memories:
            return Answer(_told(said("memory.none")))
        page = int(given.get("page") or 1)
        return Answer(listed(memories, where=True, page=page, command="/memory list"))
    if name == "forget":
        memory_id = int(given["id"])
        if await store.forget_own(member_id, memory_id):
            return Answer(_told(said("memory.forgotten", id=memory_id)))
        return Answer(refused(said("memory.not_yours", id=memory_id)))
    if name == "forget-all":
        count = await store.forget_all(member_id)
        return Answer(_told(said("memory.forgot_all", count=count)))
    if name in ("off", "on"):
        await store.refuse(Refusal.MEMBER, member_id, name == "off")
        return Answer(_told(said(f"memory.member_{name}")))
    if name == "export":
        memories = await store.of_member(member_id)
        notice = _told(said("memory.exported", count=len(memories)))
        return Answer(notice, (EXPORT_NAME, exported(memories)))
    raise KeyError(f"/memory {name}")


def server_list(page: int) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        store = target.memories
        if store is None:
            return _told(said("memory.disabled"))
        memories = await store.of_server(where.guild_id)
        if not memories:
            return _told(said("memory.server_none"))
        return listed(memories, where=False, page=page, command="/tomori memory list")

    return action


def server_forget(memory_id: int) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        store = target.memories
        if store is not None and await store.forget_in_server(where.guild_id, memory_id):
            return done(said("memory.forgotten", id=memory_id))
        return refused(said("memory.not_here", id=memory_id))

    return action


def server_switch(on: bool) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        store = target.memories
        if store is None:
            return _told(said("memory.disabled"))
        await store.refuse(Refusal.SERVER, where.guild_id, not on)
        return done(said(f"memory.server_{'on' if on else 'off'}"))

    return action
