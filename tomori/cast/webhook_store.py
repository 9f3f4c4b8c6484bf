"""The webhook the bot created in each channel for its personas to post through: its ID and
token in the shared database (migration 0010), so every process posts through one webhook,
and a message a webhook posted is known to be the bot's own."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tomori.store import Database


@dataclass(frozen=True, slots=True)
class StoredWebhook:
    webhook_id: str
    token: str


class WebhookStore:
    """The webhook the bot created in each channel: its ID and token, shared by its processes."""

    def __init__(self, database: Database) -> None:
        self._db = database

    async def of_channel(self, channel_id: str) -> StoredWebhook | None:
        rows = await self._db.fetchall(
            "SELECT webhook_id, token FROM channel_webhooks WHERE channel_id = ?", (channel_id,)
        )
        return StoredWebhook(rows[0]["webhook_id"], rows[0]["token"]) if rows else None

    async def keep(self, channel_id: str, webhook: StoredWebhook) -> None:
        async with self._db.transaction() as tx:
            await tx.execute(
                "INSERT INTO channel_webhooks (channel_id, webhook_id, token, created_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (channel_id) DO UPDATE SET"
                " webhook_id = excluded.webhook_id, token = excluded.token,"
                " created_at = excluded.created_at",
                (channel_id, webhook.webhook_id, webhook.token, await tx.now()),
            )

    async def forget(self, channel_id: str, webhook_id: str) -> None:
        """Discord says the webhook is gone: forget it (unless another process replaced it)."""
        await self._db.execute(
            "DELETE FROM channel_webhooks WHERE channel_id = ? AND webhook_id = ?",
            (channel_id, webhook_id),
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
