"""The rules that protect a server's budget: one user's cooldown and daily tokens, and bot loops.

Each rule is a function of plain values (times in seconds on the database's clock, counts), so
the same rule holds whichever process asks and whatever the limits are: the values come as
arguments (`UserLimits`), from the environment or a server's own settings. What the store
keeps for a user (`UserRecord`) and how a refusal is told (`Refusal`) are data; nothing here
reads a clock or knows Discord.

- Cooldown: a message is refused while `cooldown_s` has not passed since the user's last
  admitted message in that server. It is counted at admission (a message that starts a turn
  or joins the queue), so a user who sends three messages to a busy channel is refused the
  second at once, rather than having it wait in the queue only to be dropped when its turn
  comes; refused messages start no new window.
- Quota: a message is refused once the user's tokens since the start of the current UTC day
  reach `daily_tokens`, or once all the server's members' reach `server_daily_tokens` (the
  author's budget for one server); the day resets at 00:00 UTC. A turn running when they are
  reached stops before its next pass (`turn_budget.py`).
- Notices: at most one per cooldown window (a window starts with an admitted message) and one
  per UTC day for the quota, so a user who keeps trying is not answered by a wall of notices.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tomori.delivery.notices import Notice, cooldown_notice, quota_notice, server_quota_notice

DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class UserLimits:
    """What one user may do in one server; 0 turns a limit off."""

    cooldown_s: float = 0.0
    daily_tokens: int = 0
    server_daily_tokens: int = 0
    """What the server's members may spend together (`TOMORI_SERVER_DAILY_TOKENS`)."""

    @property
    def active(self) -> bool:
        return self.cooldown_s > 0 or self.counts_tokens

    @property
    def counts_tokens(self) -> bool:
        return self.daily_tokens > 0 or self.server_daily_tokens > 0


@dataclass(frozen=True, slots=True)
class UserRecord:
    """What the store knows of one user in one server when a message of theirs arrives."""

    admitted_at: float | None = None
    """When their last message was admitted (the start of their cooldown window)."""
    admitted_message: str | None = None
    cooldown_noticed_at: float | None = None
    quota_noticed_at: float | None = None
    tokens_today: int = 0
    """Tokens they used since the start of the current UTC day."""
    server_tokens_today: int = 0
    """Tokens every member of the server used since then (counted only with a server budget)."""


class Limit(StrEnum):
    COOLDOWN = "cooldown"
    QUOTA = "quota"
    SERVER_QUOTA = "server's daily tokens"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a message is not answered, until when, and whether this one is told so."""

    limit: Limit
    retry_at: float
    notify: bool

    @property
    def notice(self) -> Notice:
        """What the asker is told (when `notify`)."""
        if self.limit is Limit.COOLDOWN:
            return cooldown_notice(self.retry_at)
        if self.limit is Limit.SERVER_QUOTA:
            return server_quota_notice(self.retry_at)
        return quota_notice(self.retry_at)


def utc_day_start(now: float) -> float:
    """00:00 UTC of the day `now` falls in (epoch seconds count no leap seconds)."""
    return now - now % DAY_S


def next_reset(now: float) -> float:
    """When the quota of the day `now` falls in resets: the next 00:00 UTC."""
    return utc_day_start(now) + DAY_S


def judge(record: UserRecord, limits: UserLimits, now: float, message_id: str) -> Refusal | None:
    """None to admit the message; else why it is refused and whether to say so.

    The message that opened the current window is admitted again: another process that
    received the same message asks too, and the lock store's once-only admission decides.
    """
    if record.admitted_message == message_id:
        return None
    return quota_refusal(record, limits, now) or cooldown_refusal(record, limits, now)


def quota_refusal(record: UserRecord, limits: UserLimits, now: float) -> Refusal | None:
    """Refused while the day's tokens are spent, the user's or the server's; told once per
    UTC day."""
    spent = spent_limit(limits, record.tokens_today, record.server_tokens_today)
    if spent is None:
        return None
    told = record.quota_noticed_at
    return Refusal(spent, next_reset(now), notify=told is None or told < utc_day_start(now))


def spent_limit(limits: UserLimits, tokens_today: int, server_tokens_today: int) -> Limit | None:
    """Which day's tokens are spent, the server's before the user's; None while both last."""
    if 0 < limits.server_daily_tokens <= server_tokens_today:
        return Limit.SERVER_QUOTA
    if 0 < limits.daily_tokens <= tokens_today:
        return Limit.QUOTA
    return None


def cooldown_refusal(record: UserRecord, limits: UserLimits, now: float) -> Refusal | None:
    """Refused inside the window the last admitted message opened; told once per window."""
    if limits.cooldown_s <= 0 or record.admitted_at is None:
        return None
    retry_at = record.admitted_at + limits.cooldown_s
    if now >= retry_at:
        return None
    told = record.cooldown_noticed_at
    return Refusal(Limit.COOLDOWN, retry_at, notify=told is None or told < record.admitted_at)


@dataclass(slots=True)
class BotTurns:
    """Turns bots started in a row in each channel, since a human last spoke there.

    In memory: every process that receives a channel's messages sees the same sequence, so each
    counts the same; a restart forgets the count, which only lets one more short run through.
    """

    limit: int
    _runs: dict[str, int]

    @classmethod
    def capped_at(cls, limit: int) -> BotTurns:
        return cls(limit, {})

    def human_spoke(self, channel_id: str) -> None:
        self._runs.pop(channel_id, None)

    def allows(self, channel_id: str) -> bool:
        return self._runs.get(channel_id, 0) < self.limit

    def started(self, channel_id: str) -> None:
        self._runs[channel_id] = self._runs.get(channel_id, 0) + 1
