"""One user's cooldown and daily tokens in one server, kept in the database every process shares.

The rules are `tomori.policy.limits`; this reads what they need and writes what they decided, in one
transaction keyed by the user and server, on the database's clock: two processes that receive
the same message (a rolling restart, several instances) agree on it, and two messages of one
user never both open a window. Tokens are summed from `token_usage` since 00:00 UTC, for a
message's admission and for the budget a turn carries (`turn_budget.py`).
"""

from __future__ import annotations

from tomori.policy.limits import (
    Limit,
    Refusal,
    UserLimits,
    UserRecord,
    judge,
    next_reset,
    quota_refusal,
    utc_day_start,
)
from tomori.policy.turn_budget import TurnBudget
from tomori.store import Database, Transaction

DIRECT_MESSAGES = "dm"
"""The server a direct message counts in: a user's DMs are one budget of their own."""

_TOKENS_SINCE = (
    "SELECT COALESCE(SUM(input_tokens + output_tokens), 0) AS used FROM token_usage"
    " WHERE guild_id = ? AND requester_id = ? AND recorded_at >= ?"
)
_SERVER_TOKENS_SINCE = (
    "SELECT COALESCE(SUM(input_tokens + output_tokens), 0) AS used FROM token_usage"
    " WHERE guild_id = ? AND recorded_at >= ?"
)
_RECORD = (
    "SELECT admitted_at, admitted_message, cooldown_noticed_at, quota_noticed_at"
    " FROM user_limits WHERE guild_id = ? AND user_id = ?"
)
_ADMITTED = (
    "INSERT INTO user_limits (guild_id, user_id, admitted_at, admitted_message)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (guild_id, user_id) DO UPDATE"
    " SET admitted_at = excluded.admitted_at, admitted_message = excluded.admitted_message"
)
_NOTICED = {
    Limit.COOLDOWN: (
        "INSERT INTO user_limits (guild_id, user_id, cooldown_noticed_at) VALUES (?, ?, ?)"
        " ON CONFLICT (guild_id, user_id) DO UPDATE"
        " SET cooldown_noticed_at = excluded.cooldown_noticed_at"
    ),
    Limit.QUOTA: (
        "INSERT INTO user_limits (guild_id, user_id, quota_noticed_at) VALUES (?, ?, ?)"
        " ON CONFLICT (guild_id, user_id) DO UPDATE"
        " SET quota_noticed_at = excluded.quota_noticed_at"
    ),
}
_NOTICED[Limit.SERVER_QUOTA] = _NOTICED[Limit.QUOTA]  # one quota notice a day, whichever


class UserLimitStore:
    def __init__(self, database: Database) -> None:
        self._db = database

    def is_database_error(self, error: BaseException) -> bool:
        return self._db.is_database_error(error)

    async def admit(
        self, guild_id: str, user_id: str, message_id: str, limits: UserLimits, *, tells: bool
    ) -> Refusal | None:
        """Judge a message as it arrives: open the user's window if it is admitted; if it is
        refused and `tells` (a direct trigger), mark the notice it is due as posted."""
        async with self._db.transaction(key=f"user-limits:{guild_id}:{user_id}") as tx:
            now = await tx.now()
            record = await _record(tx, guild_id, user_id, now, limits)
            refusal = judge(record, limits, now, message_id)
            if refusal is None and record.admitted_message != message_id:
                await tx.execute(_ADMITTED, (guild_id, user_id, now, message_id))
            await _mark_notice(tx, guild_id, user_id, now, refusal, tells)
            return refusal

    async def quota_spent(
        self, guild_id: str, user_id: str, limits: UserLimits, *, tells: bool
    ) -> Refusal | None:
        """Judge a queued message as its turn starts: the turns before it may have spent the
        day's tokens since it was admitted."""
        if not limits.counts_tokens:
            return None
        async with self._db.transaction(key=f"user-limits:{guild_id}:{user_id}") as tx:
            now = await tx.now()
            refusal = quota_refusal(await _record(tx, guild_id, user_id, now, limits), limits, now)
            await _mark_notice(tx, guild_id, user_id, now, refusal, tells)
            return refusal

    async def turn_budget(self, guild_id: str, user_id: str, limits: UserLimits) -> TurnBudget:
        """What a turn starting now may spend of the user's and the server's day."""
        async with self._db.transaction(key=f"user-limits:{guild_id}:{user_id}") as tx:
            now = await tx.now()
            used, everyone = await _tokens(tx, guild_id, user_id, now, limits)
            return TurnBudget(limits, used, everyone, next_reset(now))


async def _record(
    tx: Transaction, guild_id: str, user_id: str, now: float, limits: UserLimits
) -> UserRecord:
    used, everyone = await _tokens(tx, guild_id, user_id, now, limits)
    row = await tx.fetchone(_RECORD, (guild_id, user_id))
    if row is None:
        return UserRecord(tokens_today=used, server_tokens_today=everyone)
    return UserRecord(
        row["admitted_at"],
        row["admitted_message"],
        row["cooldown_noticed_at"],
        row["quota_noticed_at"],
        used,
        everyone,
    )


async def _mark_notice(
    tx: Transaction, guild_id: str, user_id: str, now: float, refusal: Refusal | None, tells: bool
) -> None:
    """A silent refusal (autoreply) marks nothing: the next direct trigger is still told."""
    if tells and refusal is not None and refusal.notify:
        await tx.execute(_NOTICED[refusal.limit], (guild_id, user_id, now))


async def _tokens(
    tx: Transaction, guild_id: str, user_id: str, now: float, limits: UserLimits
) -> tuple[int, int]:
    """The user's tokens today in the server, and all its members' (each read only when a
    limit counts it, else 0)."""
    since = utc_day_start(now)
    used = everyone = 0
    if limits.daily_tokens > 0:
        row = await tx.fetchone(_TOKENS_SINCE, (guild_id, user_id, since))
        used = int(row["used"]) if row is not None else 0
    if limits.server_daily_tokens > 0:
        row = await tx.fetchone(_SERVER_TOKENS_SINCE, (guild_id, since))
        everyone = int(row["used"]) if row is not None else 0
    return used, everyone
