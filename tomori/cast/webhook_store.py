"""The webhook the bot created in each channel for its personas to post through: its ID and
token in the shared database (migration 0010), so every process posts through one webhook,
and a message a webhook posted is known to be the bot's own. The token is kept sealed
(`tomori.store.sealed`): a copy of the database is no key to post in the bot's channels."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tomori.store import Database
from tomori.store.sealed import SecretBox, is_sealed


@dataclass(frozen=True, slots=True)
class StoredWebhook:
    webhook_id: str
    token: str


class WebhookStore:
    """The webhook the bot created in each channel: its ID and token, shared by its processes."""

    def __init__(self, database: Database, box: SecretBox) -> None:
        self._db = database
        self._box = box

    async def of_channel(self, channel_id: str) -> StoredWebhook | None:
        """The channel's webhook; None if none is stored, or its token was sealed under other
        key material (the bot's token was reset since): a new one is made."""
        rows = await self._db.fetchall(
            "SELECT webhook_id, token FROM channel_webhooks WHERE channel_id = ?", (channel_id,)
        )
        if not rows:
            return None
        token = self._box.open(rows[0]["token"])
        return None if token is None else StoredWebhook(rows[0]["webhook_id"], token)

    async def seal_all(self) -> int:
        """Seal every token an earlier version stored in clear; how many there were."""
        rows = await self._db.fetchall("SELECT channel_id, webhook_id, token FROM channel_webhooks")
        clear = [row for row in rows if not is_sealed(row["token"])]
        for row in clear:
            await self._db.execute(
                "UPDATE channel_webhooks SET token = ? WHERE channel_id = ? AND webhook_id = ?",
                (self._box.seal(row["token"]), row["channel_id"], row["webhook_id"]),
            )
        return len(clear)

    async def keep(self, channel_id: str, webhook: StoredWebhook) -> None:
        async with self._db.transaction() as tx:
            await tx.execute(
                "INSERT INTO channel_webhooks (channel_id, webhook_id, token, created_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (channel_id) DO UPDATE SET"
                " webhook_id = excluded.webhook_id, token = excluded.token,"
                " created_at = excluded.created_at",
                (channel_id, webhook.webhook_id, self._box.seal(webhook.token), await tx.now()),
            )

    async def forget(self, channel_id: str, webhook_id: str) -> None:
        """Discord says the webhook is gone: forget it (unless another process replaced it)."""
        await self._db.execute(
            "DELETE FROM channel_webhooks WHERE channel_id = ? AND webhook_id = ?",
            (channel_id, webhook_id),
        )

    async def forget_channels(self, channel_ids: Iterable[str]) -> None:
        """Discord says these channels are gone: forget their webhooks."""
        ids = list(dict.fromkeys(channel_ids))
        for start in range(0, len(ids), 100):
            batch = ids[start : start + 100]
            await self._db.execute(
                "DELETE FROM channel_webhooks WHERE channel_id IN"
                f" ({', '.join('?' for _ in batch)})",
                batch,
            )

    async def ids(self, webhook_ids: Iterable[str]) -> set[str]:
        """Of these webhooks, those the bot created."""
        ids = list(dict.fromkeys(webhook_ids))
        if not ids:
            return set()
        rows = await self._db.fetchall(
            "SELECT webhook_id FROM channel_webhooks WHERE webhook_id IN"
            f" ({', '.join('?' for _ in ids)})",
            ids,
        )
        return {row["webhook_id"] for row in rows}
