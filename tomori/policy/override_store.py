"""Where `/tomori` keeps what it sets: `server_settings` and `channel_settings` (migration 0006;
whether a server allows scenes since 0013, the prefill since 0014, swipes since 0020, its
progress and errors settings since 0021).

A turn reads its channel's values afresh (one query for both scopes), so a change made through
any process sharing the database applies from the next turn. The reply rule asks for every
message in every channel the bot sees, which would be a query per message: it reads through a
cache instead, whose entries live `CACHE_TTL_S`, so another process's `/tomori autoreply` is
followed within that time; a change made through this process applies at once.
"""

from __future__ import annotations

import time
from dataclasses import astuple, fields
from enum import StrEnum

from tomori.config.scope import Scope
from tomori.config.settings import ShowErrors, ShowProgress
from tomori.policy.overrides import NOTHING, Overrides
from tomori.store import Database, Row, StoreError

CACHE_TTL_S = 5.0
MAX_CACHED = 4_096
"""Channels kept at most; past it, expired entries go (and if none has, all do)."""

_COLUMNS = tuple(field.name for field in fields(Overrides))
_CHANNEL_COLUMNS = ("models", "system_prompt", "autoreply", "prefill")
_SERVER_COLUMNS = (
    "models",
    "system_prompt",
    "cooldown_ms",
    "daily_tokens",
    "scenes",
    "prefill",
    "follow_ups",
    "swipes",
    "progress",
    "errors",
)
_NOT_THERE = {
    "channel": (
        "cooldown_ms",
        "daily_tokens",
        "scenes",
        "follow_ups",
        "swipes",
        "progress",
        "errors",
    ),
    "server": ("autoreply",),
}


def _select(scope: str, table: str, key: str) -> str:
    columns = ", ".join(
        f"NULL AS {name}" if name in _NOT_THERE[scope] else name for name in _COLUMNS
    )
    return f"SELECT '{scope}' AS scope, {columns} FROM {table} WHERE {key} = ?"


_READ = (
    _select("channel", "channel_settings", "channel_id")
    + " UNION ALL "
    + _select("server", "server_settings", "guild_id")
)


class SettingsUnavailable(StoreError):
    """The store failed a read less than `CACHE_TTL_S` ago: the cached readers do not wait on
    it again meanwhile (each message would wait out the statement timeout in turn)."""


class OverrideStore:
    def __init__(self, database: Database) -> None:
        self._db = database
        self._cache: dict[tuple[str, str], tuple[float, Overrides, Overrides]] = {}
        self._changes = 0
        """Bumped by every change through this process: a read begun before one is not
        cached, or it would bring back for `CACHE_TTL_S` what the change replaced."""
        self._failing_until = 0.0

    def is_database_error(self, error: BaseException) -> bool:
        return isinstance(error, SettingsUnavailable) or self._db.is_database_error(error)

    async def read(self, guild_id: str, channel_id: str) -> tuple[Overrides, Overrides]:
        """The channel's values and its server's, as stored now."""
        changes = self._changes
        found: dict[str, Overrides] = {}
        try:
            rows = await self._db.fetchall(_READ, (channel_id, guild_id))
        except Exception as error:
            if self._db.is_database_error(error):
                self._failing_until = time.monotonic() + CACHE_TTL_S
            raise
        for row in rows:
            found[row["scope"]] = _overrides(row)
        channel, server = found.get("channel", NOTHING), found.get("server", NOTHING)
        if changes == self._changes:
            self._remember((guild_id, channel_id), channel, server)
        return channel, server

    async def read_cached(self, guild_id: str, channel_id: str) -> tuple[Overrides, Overrides]:
        """As `read`, or as it was read less than `CACHE_TTL_S` ago; a `channel_id` of ""
        reads the server's alone. `SettingsUnavailable` while a read failed that recently."""
        now = time.monotonic()
        cached = self._cache.get((guild_id, channel_id))
        if cached is not None and cached[0] > now:
            return cached[1], cached[2]
        if now < self._failing_until:
            raise SettingsUnavailable("the settings could not be read a moment ago")
        return await self.read(guild_id, channel_id)

    async def set(self, scope: Scope, guild_id: str, channel_id: str, changes: Overrides) -> None:
        """Store every value `changes` sets, at `scope`, in one statement: all or nothing."""
        names = _CHANNEL_COLUMNS if scope is Scope.CHANNEL else _SERVER_COLUMNS
        values = dict(zip(_COLUMNS, astuple(changes), strict=True))
        given = [name for name in names if values[name] is not None]
        if any(values[name] is not None for name in _COLUMNS if name not in names):
            raise ValueError(f"{changes} sets a value a {scope} does not have")
        if not given:
            return
        stored = [_stored(values[name]) for name in given]
        async with self._db.transaction() as tx:
            now = await tx.now()
            if scope is Scope.CHANNEL:
                keys, params = ["channel_id", "guild_id"], [channel_id, guild_id]
            else:
                keys, params = ["guild_id"], [guild_id]
            table = f"{scope}_settings"
            columns = [*keys, *given, "updated_at"]
            updates = ", ".join(f"{name} = excluded.{name}" for name in [*given, "updated_at"])
            await tx.execute(
                f"INSERT INTO {table} ({', '.join(columns)})"
                f" VALUES ({', '.join('?' for _ in columns)})"
                f" ON CONFLICT ({keys[0]}) DO UPDATE SET {updates}",
                (*params, *stored, now),
            )
        self._forget(scope, guild_id, channel_id)

    async def clear(self, scope: Scope, guild_id: str, channel_id: str, name: str) -> bool:
        """Unset the one value `name` at `scope` (the next scope out applies); False if it
        was not set."""
        names = _CHANNEL_COLUMNS if scope is Scope.CHANNEL else _SERVER_COLUMNS
        if name not in names:
            raise ValueError(f"a {scope} has no value {name!r}")
        channel = scope is Scope.CHANNEL
        key, value = ("channel_id", channel_id) if channel else ("guild_id", guild_id)
        async with self._db.transaction() as tx:
            now = await tx.now()
            cleared = await tx.execute(
                f"UPDATE {scope}_settings SET {name} = NULL, updated_at = ?"
                f" WHERE {key} = ? AND {name} IS NOT NULL",
                (now, value),
            )
        self._forget(scope, guild_id, channel_id)
        return cleared > 0

    async def reset(self, scope: Scope, guild_id: str, channel_id: str) -> bool:
        """Clear every value set at `scope`; False if none was."""
        if scope is Scope.CHANNEL:
            cleared = await self._db.execute(
                "DELETE FROM channel_settings WHERE channel_id = ?", (channel_id,)
            )
        else:
            cleared = await self._db.execute(
                "DELETE FROM server_settings WHERE guild_id = ?", (guild_id,)
            )
        self._forget(scope, guild_id, channel_id)
        return cleared > 0

    def _remember(self, key: tuple[str, str], channel: Overrides, server: Overrides) -> None:
        now = time.monotonic()
        if len(self._cache) >= MAX_CACHED:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
        self._cache[key] = (now + CACHE_TTL_S, channel, server)

    def _forget(self, scope: Scope, guild_id: str, channel_id: str) -> None:
        """A change through this process applies at once: drop what it may have changed (a
        server's values reach each of its channels' entries)."""
        self._changes += 1
        if scope is Scope.CHANNEL:
            self._cache.pop((guild_id, channel_id), None)
        else:
            self._cache.clear()


def _overrides(row: Row) -> Overrides:
    return Overrides(
        models=row["models"],
        system_prompt=row["system_prompt"],
        autoreply=_flag(row["autoreply"]),
        cooldown_ms=row["cooldown_ms"],
        daily_tokens=row["daily_tokens"],
        scenes=_flag(row["scenes"]),
        prefill=row["prefill"],
        follow_ups=_flag(row["follow_ups"]),
        swipes=_flag(row["swipes"]),
        progress=_chosen(ShowProgress, row["progress"]),
        errors=_chosen(ShowErrors, row["errors"]),
    )


def _chosen[E: StrEnum](kind: type[E], stored: str | None) -> E | None:
    """A stored choice; None for none, or for one this version does not know (a newer
    version's, or a hand-edited row): the next scope out applies."""
    try:
        return None if stored is None else kind(stored)
    except ValueError:
        return None


def _stored(value: object) -> object:
    """A value as its column keeps it: a flag as 0 or 1, a choice as its text."""
    if isinstance(value, bool):
        return int(value)
    return value.value if isinstance(value, StrEnum) else value


def _flag(stored: int | None) -> bool | None:
    return None if stored is None else bool(stored)
