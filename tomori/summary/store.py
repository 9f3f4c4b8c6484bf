"""`SummaryStore`: each channel's summary, keyed by its server, and the messages it covers.

A summary is read and written by (server, channel) together, so no channel of one server
reads another's (a direct message's server is ''). Each summary keeps which messages it
covers and who wrote them: a deleted message drops the summaries that covered it, and a
member's `/memory forget-all` drops every summary that covered one of theirs, in the
transaction that forgets their memories (`drop_member`). A dropped summary is folded again,
from what is left in the channel, by the next turns (`tomori.turns.summaries`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from tomori.store import Database, Transaction

DM_GUILD = ""


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

    async def save(
        self,
        guild_id: str | None,
        channel_id: str,
        text: str,
        covered: Sequence[Said],
        over: Summary | None = None,
    ) -> bool:
        """Keep `text` as the channel's summary, now covering `covered` too, if the summary
        is still `over` (the one the fold began from; None: none): False, keeping nothing,
        if it was dropped or written again meanwhile (by a delete, a forget, another
        process's fold), which the text may not take into account."""
        guild = _where(guild_id)
        through = str(max(int(said.message_id) for said in covered))
        async with self._db.transaction() as tx:
            rows = await tx.fetchall(
                "SELECT through_id FROM channel_summaries WHERE guild_id = ? AND channel_id = ?",
                (guild, channel_id),
            )
            now_over = rows[0]["through_id"] if rows else None
            if now_over != (None if over is None else over.through_id):
                return False
            now = await tx.now()
            await tx.execute(
                "INSERT INTO channel_summaries (guild_id, channel_id, text, through_id,"
                " updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (guild_id, channel_id)"
                " DO UPDATE SET text = excluded.text, through_id = excluded.through_id,"
                " updated_at = excluded.updated_at",
                (guild, channel_id, text, through, now),
            )
            await tx.executemany(
                "INSERT INTO summary_sources (guild_id, channel_id, message_id, author_id)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (guild_id, channel_id, message_id) DO NOTHING",
                [(guild, channel_id, said.message_id, said.author_id) for said in covered],
            )
        return True

    async def drop_messages(self, channel_id: str, message_ids: Collection[str]) -> int:
        """Drop the channel's summary if it covered one of `message_ids` (deleted)."""
        if not message_ids:
            return 0
        marks = ", ".join("?" for _ in message_ids)
        covering = (
            "SELECT guild_id, channel_id FROM summary_sources"
            f" WHERE channel_id = ? AND message_id IN ({marks})"
        )
        async with self._db.transaction() as tx:
            return await _drop(tx, covering, (channel_id, *message_ids))

    async def older_than(self, kept_s: float) -> int:
        """Drop the summaries last written more than `kept_s` ago (the retention sweep)."""
        async with self._db.transaction() as tx:
            cutoff = await tx.now() - kept_s
            covering = "SELECT guild_id, channel_id FROM channel_summaries WHERE updated_at < ?"
            return await _drop(tx, covering, (cutoff,))


async def drop_member(tx: Transaction, member_id: str) -> int:
    """Drop, in `tx`, every summary that covered a message `member_id` wrote."""
    covering = "SELECT guild_id, channel_id FROM summary_sources WHERE author_id = ?"
    return await _drop(tx, covering, (member_id,))


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
