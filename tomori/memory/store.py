"""`MemoryStore`: memories in the database, each read and delete kept to its scope by the query.

Which memories a place may see is written once (`_visible`): in a direct message, that
conversation's alone; in a server, the server's own, those about the member the turn answers
(never another member's), and the speaking persona's (the bot's when none speaks); never
another server's nor any direct message's; never those saved
from the turns of a member who said no (`/memory off`), and none at all in a server that said
no (`/tomori memory off`). A save keeps to the bounds (`TOMORI_MEMORY_CHARS`,
`TOMORI_MEMORIES_PER_SCOPE`) and to those refusals, and fails with the reason otherwise; none
is made in a channel not everyone in its server may read (every scope of a server is shown in
its other channels, so a staff channel's talk would leave it). Every
delete removes the rows and their search entries in one transaction (`_delete`); on SQLite the
search index is then merged, so no deleted word is left in it, and once it commits the `-wal`
file is emptied into the database (`Database.scrub`), whose freed pages are zeroed. A member's
forget-all drops the channel summaries that covered their messages in that transaction too,
and marks them so no summary takes their messages in again (`tomori.summary`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from tomori.config.settings import Settings
from tomori.errors import TomoriError
from tomori.memory import search
from tomori.memory.scopes import DM_GUILD, Place, Scope
from tomori.store import Database, Row, Transaction
from tomori.store.base import Params
from tomori.summary.store import WRITES, drop_member

COLUMNS = "m.memory_id, m.scope, m.guild_id, m.owner_id, m.member_id, m.text, m.created_at"


class Refusal(StrEnum):
    MEMBER = "member"
    SERVER = "server"


class MemoryRefused(TomoriError):
    """A save or a forget the store will not do; the message says why, for the model."""


@dataclass(frozen=True, slots=True)
class Memory:
    memory_id: int
    scope: Scope
    guild_id: str
    owner_id: str
    member_id: str
    text: str
    created_at: float

    @classmethod
    def of(cls, row: Row) -> Memory:
        return cls(
            int(row["memory_id"]),
            Scope(row["scope"]),
            row["guild_id"],
            row["owner_id"],
            row["member_id"],
            row["text"],
            float(row["created_at"]),
        )


@dataclass(frozen=True, slots=True)
class Bounds:
    """The author's bounds (`Settings`): characters per memory, memories per scope."""

    chars: int
    per_scope: int


def _visible(place: Place) -> tuple[str, Params]:
    """The condition on `memories m` a place's reads and deletes keep to (see the module)."""
    not_refused = "m.member_id NOT IN (SELECT id FROM memory_refusals WHERE kind = 'member')"
    if place.guild_id is None:
        return (
            f"m.guild_id = ? AND m.scope = 'dm' AND m.owner_id = ? AND {not_refused}",
            (DM_GUILD, place.channel_id),
        )
    return (
        "m.guild_id = ? AND (m.scope = 'server' OR (m.scope = 'member' AND m.owner_id = ?)"
        f" OR (m.scope = 'persona' AND m.owner_id = ?)) AND {not_refused}"
        " AND m.guild_id NOT IN (SELECT id FROM memory_refusals WHERE kind = 'server')",
        (place.guild_id, place.member_id, place.persona or ""),
    )


class MemoryStore:
    def __init__(self, database: Database, bounds: Bounds) -> None:
        self._db = database
        self._bounds = bounds

    # -- what a turn does ---------------------------------------------------------------------

    async def save(self, place: Place, scope: Scope, text: str) -> Memory:
        """Keep `text` in `scope` as saved at `place`, or raise `MemoryRefused` saying why; a
        text the scope keeps already is not kept twice (the one kept is returned)."""
        if not place.shared:
            raise MemoryRefused(
                "not everyone in this server can read this channel, and what is remembered"
                " here would be shown in the channels they read: nothing is remembered here"
            )
        text = " ".join(text.split())
        if not text:
            raise MemoryRefused("there is nothing to remember: give the fact as text")
        if len(text) > self._bounds.chars:
            raise MemoryRefused(
                f"a memory holds at most {self._bounds.chars} characters (this one has"
                f" {len(text)}): say it shorter"
            )
        guild_id, owner_id = place.owner(scope)
        async with self._db.transaction() as tx:
            await self._refuse_if_off(tx, place)
            kept = await tx.fetchone(
                f"SELECT {COLUMNS} FROM memories m WHERE m.guild_id = ? AND m.scope = ?"
                " AND m.owner_id = ? AND m.text = ?",
                (guild_id, scope.value, owner_id, text),
            )
            if kept is not None:  # a regenerated answer saving it again, say
                return Memory.of(kept)
            row = await tx.fetchone(
                "SELECT COUNT(*) AS kept FROM memories"
                " WHERE guild_id = ? AND scope = ? AND owner_id = ?",
                (guild_id, scope.value, owner_id),
            )
            if row is not None and int(row["kept"]) >= self._bounds.per_scope:
                raise MemoryRefused(
                    f"this scope already keeps {self._bounds.per_scope} memories, the most"
                    " it may: forget one that no longer matters first"
                )
            now = await tx.now()
            saved = await tx.fetchone(
                "INSERT INTO memories (scope, guild_id, owner_id, member_id, text, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING memory_id",
                (scope.value, guild_id, owner_id, place.member_id, text, now),
            )
            assert saved is not None
            memory_id = int(saved["memory_id"])
            if self._db.engine == "sqlite":
                await tx.execute(
                    "INSERT INTO memories_fts (rowid, text) VALUES (?, ?)", (memory_id, text)
                )
        return Memory(memory_id, scope, guild_id, owner_id, place.member_id, text, now)

    async def _refuse_if_off(self, tx: Transaction, place: Place) -> None:
        refusals = await tx.fetchall(
            "SELECT kind FROM memory_refusals WHERE (kind = 'member' AND id = ?)"
            " OR (kind = 'server' AND id = ?)",
            (place.member_id, place.guild_id or ""),
        )
        kinds = {row["kind"] for row in refusals}
        if Refusal.MEMBER in kinds:
            raise MemoryRefused(
                "the person you are answering turned memories off (/memory off): nothing of"
                " them may be remembered"
            )
        if Refusal.SERVER in kinds:
            raise MemoryRefused("this server turned memories off: nothing may be remembered here")

    async def recall(self, place: Place, text: str, limit: int) -> list[Memory]:
        """The memories `place` may see that `text`'s words find, best first, then the newest,
        `limit` in all, in that order: the most needed first, as a small model's note is cut
        from its end (`tomori.memory.note`)."""
        if limit <= 0:
            return []
        visible, params = _visible(place)
        ids: list[int] = []
        words = search.terms(text)
        if words:
            sql, before = search.matching(self._db.engine, words, visible)
            after = search.ranked_again(self._db.engine, words)
            rows = await self._db.fetchall(sql, (*before, *params, *after, limit))
            ids += [int(row["memory_id"]) for row in rows]
        newest = await self._db.fetchall(
            f"SELECT m.memory_id FROM memories m WHERE {visible}"
            " ORDER BY m.created_at DESC, m.memory_id DESC LIMIT ?",
            (*params, limit),
        )
        for row in newest:
            if int(row["memory_id"]) not in ids:
                ids.append(int(row["memory_id"]))
        chosen = ids[:limit]
        if not chosen:
            return []
        marks = ", ".join("?" for _ in chosen)
        rows = await self._db.fetchall(
            f"SELECT {COLUMNS} FROM memories m WHERE m.memory_id IN ({marks}) AND {visible}",
            (*chosen, *params),
        )
        found = {int(row["memory_id"]): Memory.of(row) for row in rows}
        return [found[memory_id] for memory_id in chosen if memory_id in found]

    async def forget_here(self, place: Place, memory_id: int) -> bool:
        """Forget a memory `place` may see (the model's `forget`); False if it sees none so."""
        visible, params = _visible(place)
        return await self._delete(f"m.memory_id = ? AND {visible}", (memory_id, *params)) > 0

    # -- what a member does with their own ------------------------------------------------------

    async def of_member(self, member_id: str) -> list[Memory]:
        """Every memory saved from `member_id`'s turns, anywhere, oldest first."""
        rows = await self._db.fetchall(
            f"SELECT {COLUMNS} FROM memories m WHERE m.member_id = ?"
            " ORDER BY m.created_at, m.memory_id",
            (member_id,),
        )
        return [Memory.of(row) for row in rows]

    async def forget_own(self, member_id: str, memory_id: int) -> bool:
        """Forget one of `member_id`'s memories; False if it is not theirs (or is gone)."""
        return await self._delete("m.member_id = ? AND m.memory_id = ?", (member_id, memory_id)) > 0

    async def forget_all(self, member_id: str) -> int:
        """Forget every memory saved from `member_id`'s turns, and (in the same transaction)
        every channel summary that covered a message of theirs, marking them forgotten so no
        fold takes their messages in again; how many memories there were."""
        async with self._db.transaction(WRITES) as tx:
            forgotten = await self._delete_in(tx, "m.member_id = ?", (member_id,))
            await drop_member(tx, member_id)
        await self._db.scrub()
        return forgotten

    # -- what a server's admins do -----------------------------------------------------------

    async def of_server(self, guild_id: str) -> list[Memory]:
        """Every memory kept in server `guild_id` (any scope), oldest first."""
        rows = await self._db.fetchall(
            f"SELECT {COLUMNS} FROM memories m WHERE m.guild_id = ?"
            " ORDER BY m.created_at, m.memory_id",
            (guild_id,),
        )
        return [Memory.of(row) for row in rows]

    async def forget_in_server(self, guild_id: str, memory_id: int) -> bool:
        return await self._delete("m.guild_id = ? AND m.memory_id = ?", (guild_id, memory_id)) > 0

    # -- who said no ---------------------------------------------------------------------------

    async def refuse(self, kind: Refusal, who: str, refused: bool) -> None:
        """`who` (a member or a server) says no to memories (`refused`), or yes again."""
        async with self._db.transaction() as tx:
            if not refused:
                await tx.execute(
                    "DELETE FROM memory_refusals WHERE kind = ? AND id = ?", (kind.value, who)
                )
                return
            now = await tx.now()
            await tx.execute(
                "INSERT INTO memory_refusals (kind, id, since) VALUES (?, ?, ?)"
                " ON CONFLICT (kind, id) DO NOTHING",
                (kind.value, who, now),
            )

    async def refuses(self, kind: Refusal, who: str) -> bool:
        rows = await self._db.fetchall(
            "SELECT 1 FROM memory_refusals WHERE kind = ? AND id = ?", (kind.value, who)
        )
        return bool(rows)

    # -- the one delete -------------------------------------------------------------------------

    async def older_than(self, kept_s: float) -> int:
        """Forget the memories saved more than `kept_s` ago (the retention sweep)."""
        async with self._db.transaction() as tx:
            cutoff = await tx.now() - kept_s
            deleted = await self._delete_in(tx, "m.created_at < ?", (cutoff,))
        if deleted:
            await self._db.scrub()
        return deleted

    async def _delete(self, where: str, params: Sequence[object]) -> int:
        async with self._db.transaction() as tx:
            deleted = await self._delete_in(tx, where, params)
        if deleted:
            await self._db.scrub()
        return deleted

    async def _delete_in(self, tx: Transaction, where: str, params: Sequence[object]) -> int:
        """Delete the memories `where` holds for, with their search entries, in `tx`."""
        chosen = f"SELECT m.memory_id FROM memories m WHERE {where}"
        if self._db.engine == "sqlite":
            await tx.execute(f"DELETE FROM memories_fts WHERE rowid IN ({chosen})", params)
        deleted = await tx.execute(f"DELETE FROM memories WHERE memory_id IN ({chosen})", params)
        if deleted and self._db.engine == "sqlite":
            # A deleted entry's words stay in the index's older segments until a merge.
            await tx.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
        return deleted


def memory_store(database: Database, settings: Settings) -> MemoryStore | None:
    """The store turns and commands use; None when the author turned memories off."""
    if not settings.memories:
        return None
    return MemoryStore(database, Bounds(settings.memory_chars, settings.memories_per_scope))
