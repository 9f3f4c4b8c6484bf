"""The lock backend for a database."""

from __future__ import annotations

from typing import cast

from tomori.config import Settings
from tomori.locks.backend import LockBackend
from tomori.locks.sqlite import SqliteLockBackend
from tomori.store.base import Database


def lock_backend(database: Database, settings: Settings) -> LockBackend:
    budgets = (settings.lock_timeout_s, settings.queue_max_age_s)
    if database.engine == "postgres":  # asyncpg is imported only when PostgreSQL is used
        from tomori.locks.postgres import ListeningDatabase, PostgresLockBackend

        return PostgresLockBackend(cast(ListeningDatabase, database), *budgets)
    return SqliteLockBackend(database, *budgets)
