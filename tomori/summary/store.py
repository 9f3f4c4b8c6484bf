"""`SummaryStore`: each channel's summary, keyed by its server, and the messages it covers.

A summary is read and written by (server, channel) together, so no channel of one server
reads another's (a direct message's server is ''). Each summary keeps which messages it
covers and who wrote them: a deleted message drops the summaries that covered it, and a
member's `/memory forget-all` drops every summary that covered one of theirs, in the
transaction that forgets their memories (`drop_member`), and marks them forgotten: no fold
takes in a message of theirs again (`unforgotten`), though Discord still holds it. Nor does a
fold take in the messages of a member who turned memories off (`/memory off`), while it is
off: who is left out is written once (`LEFT_OUT`). A dropped summary is folded again, from
what is left in the channel, by the next turns (`tomori.turns.summaries`), as a first fold:
from the window's worth just before the window. Once a drop commits, the database is scrubbed
(`Database.scrub`: on SQLite the `-wal` file still holds the dropped text until then).

A fold reads, asks a model, then writes: a delete or a forget may land in between. So a fold
`begin`s by reading the channel's summary and its count of deletes, and its `save` keeps
nothing if, in the write's transaction, the summary or the count changed or an author of what
it folded was forgotten (or turned memories off). Every write here takes one lock (`WRITES`),
so on PostgreSQL too a forget and a fold's write never interleave: whichever commits second
sees the other's rows.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from tomori.store import Database, Transaction

DM_GUILD = ""
WRITES = "tomori-channel-summaries"
"""The lock every write of summaries, and a member's forget, takes (see the module)."""

LEFT_OUT = (
    "SELECT member_id FROM summary_forgotten"
    " UNION SELECT id FROM memory_refusals WHERE kind = 'member'"
)
"""The members no fold takes a message of: forgotten (forget-all), or who turned memories off."""


@dataclass(frozen=True, slots=True)
class Said:
    """One message that fell out of the window, as the summarizing model is shown it."""

    message_id: str
    author_id: str
    line: str
    """Its speaker's name, then its text."""


@dataclass(frozen=True, slots=True)
class Summary:
    text: str
    through_id: str
    """The newest message folded in."""


@dataclass(frozen=True, slots=True)
class Began:
    """What a fold began from: the channel's summary then (None: none) and its deletes."""

    summary: Summary | None
    changes: int


def _where(guild_id: str | None) -> str:
    return DM_GUILD if guild_id is None else guild_id


class SummaryStore:
    def __init__(self, database: Database) -> None:
        self._db = database

    @property
    def database(self) -> Database:
        return self._db

    async def of(self, guild_id: str | None, channel_id: str) -> Summary | None:
        rows = await self._db.fetchall(
            "SELECT text, through_id FROM channel_summaries WHERE guild_id = ? AND channel_id = ?",
            (_where(guild_id), channel_id),
        )
        return Summary(rows[0]["text"], rows[0]["through_id"]) if rows else None

    async def begin(self, guild_id: str | None, channel_id: str) -> Began:
        """What a fold of the channel begins from, read before it reads the channel."""
        async with self._db.transaction() as tx:
            return Began(
                await _summary(tx, _where(guild_id), channel_id), await _changes(tx, channel_id)
            )

    async def unforgotten(self, said: Sequence[Said]) -> list[Said]:
        """`said` less the messages of members left out (`LEFT_OUT`)."""
        authors = sorted({item.author_id for item in said})
        if not authors:
            return []
        left_out = await self._db.fetchall(
            f"SELECT member_id FROM ({LEFT_OUT}) AS left_out"
            f" WHERE member_id IN ({', '.join('?' for _ in authors)})",
            authors,
        )
        gone = {row["member_id"] for row in left_out}
        return [item for item in said if item.author_id not in gone]

    async def save(
        self,
        guild_id: str | None,
        channel_id: str,
        text: str,
        covered: Sequence[Said],
        began: Began,
        *,
        through: str | None = None,
    ) -> bool:
        """Keep `text` as the channel's summary, now covering `covered` (and the messages read
        up to `through`, the newest of `covered` by default), unless what it `began` from
        changed meanwhile: the summary dropped or written again, a message of the channel
        deleted, an author of `covered` forgotten or turning memories off. Then False, keeping
        nothing: the text may hold what is gone."""
        guild = _where(guild_id)
        newest = through or max(covered, key=lambda said: int(said.message_id)).message_id
        async with self._db.transaction(WRITES) as tx:
            if await _summary(tx, guild, channel_id) != began.summary:
                return False
            if await _changes(tx, channel_id) != began.changes:
                return False
            if await _any_left_out(tx, {said.author_id for said in covered}):
                return False
            now = await tx.now()
            await tx.execute(
                "INSERT INTO channel_summaries (guild_id, channel_id, text, through_id,"
                " updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (guild_id, channel_id)"
                " DO UPDATE SET text = excluded.text, through_id = excluded.through_id,"
                " updated_at = excluded.updated_at",
                (guild, channel_id, text, newest, now),
            )
            await tx.executemany(
                "INSERT INTO summary_sources (guild_id, channel_id, message_id, author_id)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (guild_id, channel_id, message_id) DO NOTHING",
                [(guild, channel_id, said.message_id, said.author_id) for said in covered],
            )
        return True

    async def drop_messages(self, channel_id: str, message_ids: Collection[str]) -> int:
        """Drop the channel's summary if it covered one of `message_ids` (deleted), and count
        the delete, so a fold under way there keeps nothing."""
        if not message_ids:
            return 0
        marks = ", ".join("?" for _ in message_ids)
        covering = (
            "SELECT guild_id, channel_id FROM summary_sources"
            f" WHERE channel_id = ? AND message_id IN ({marks})"
        )
        async with self._db.transaction(WRITES) as tx:
            now = await tx.now()
            await tx.execute(
                "INSERT INTO summary_changes (channel_id, changes, changed_at) VALUES (?, 1, ?)"
                " ON CONFLICT (channel_id) DO UPDATE SET"
                " changes = summary_changes.changes + 1, changed_at = excluded.changed_at",
                (channel_id, now),
            )
            dropped = await _drop(tx, covering, (channel_id, *message_ids))
        if dropped:
            await self._db.scrub()
        return dropped

    async def older_than(self, kept_s: float) -> int:
        """Drop the summaries last written more than `kept_s` ago (the retention sweep)."""
        async with self._db.transaction() as tx:
            cutoff = await tx.now() - kept_s
            await tx.execute("DELETE FROM summary_changes WHERE changed_at < ?", (cutoff,))
            covering = "SELECT guild_id, channel_id FROM channel_summaries WHERE updated_at < ?"
            dropped = await _drop(tx, covering, (cutoff,))
        if dropped:
            await self._db.scrub()
        return dropped


async def drop_member(tx: Transaction, member_id: str) -> int:
    """Mark `member_id` forgotten and drop every summary that covered a message they wrote,
    in `tx`, which holds the `WRITES` lock (a fold's write then sees both, or they see it)."""
    now = await tx.now()
    await tx.execute(
        "INSERT INTO summary_forgotten (member_id, since) VALUES (?, ?)"
        " ON CONFLICT (member_id) DO UPDATE SET since = excluded.since",
        (member_id, now),
    )
    covering = "SELECT guild_id, channel_id FROM summary_sources WHERE author_id = ?"
    return await _drop(tx, covering, (member_id,))


async def _summary(tx: Transaction, guild: str, channel_id: str) -> Summary | None:
    rows = await tx.fetchall(
        "SELECT text, through_id FROM channel_summaries WHERE guild_id = ? AND channel_id = ?",
        (guild, channel_id),
    )
    return Summary(rows[0]["text"], rows[0]["through_id"]) if rows else None


async def _changes(tx: Transaction, channel_id: str) -> int:
    rows = await tx.fetchall(
        "SELECT changes FROM summary_changes WHERE channel_id = ?", (channel_id,)
    )
    return int(rows[0]["changes"]) if rows else 0


async def _any_left_out(tx: Transaction, authors: Collection[str]) -> bool:
    if not authors:
        return False
    marks = ", ".join("?" for _ in authors)
    rows = await tx.fetchall(
        f"SELECT 1 FROM ({LEFT_OUT}) AS left_out WHERE member_id IN ({marks})", sorted(authors)
    )
    return bool(rows)


async def _drop(tx: Transaction, covering: str, params: Sequence[object]) -> int:
    """Delete the summaries (and their sources) of the channels `covering` selects."""
    channels = await tx.fetchall(covering, tuple(params))
    dropped = 0
    for guild, channel in {(row["guild_id"], row["channel_id"]) for row in channels}:
        where = (guild, channel)
        await tx.execute("DELETE FROM summary_sources WHERE guild_id = ? AND channel_id = ?", where)
        dropped += await tx.execute(
            "DELETE FROM channel_summaries WHERE guild_id = ? AND channel_id = ?", where
        )
    return dropped
