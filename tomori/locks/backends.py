"""The lock backend for a database."""

from __future__ import annotations

from tomori.config import Settings
from tomori.locks.backend import LockBackend
from tomori.locks.sqlite import SqliteLockBackend
from tomori.store.base import Database


def lock_backend(database: Database, settings: Settings) -> LockBackend:
    return SqliteLockBackend(database, settings.lock_timeout_s, settings.queue_max_age_s)
