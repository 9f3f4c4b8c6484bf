"""Channel locks: one turn per channel across every process on the database, the rest queued.

`ChannelLocks` (registry.py) admits, queues, kills and supervises turns; `rules` holds each
lock rule once; a `Lease` per running turn holds what only its process knows and is the turn's
`TurnGuard`; a `LockBackend` (SQLite or PostgreSQL) keeps the rows, on the database's clock.
"""

from tomori.locks.backend import LockBackend, lock_backend
from tomori.locks.registry import ChannelLocks
from tomori.locks.sqlite import SqliteLockBackend
from tomori.locks.vocabulary import (
    Admission,
    KillCallback,
    KillOutcome,
    Trigger,
    Turn,
    TurnGuard,
    TurnRunner,
)

__all__ = [
    "Admission",
    "ChannelLocks",
    "KillCallback",
    "KillOutcome",
    "LockBackend",
    "SqliteLockBackend",
    "Trigger",
    "Turn",
    "TurnGuard",
    "TurnRunner",
    "lock_backend",
]
