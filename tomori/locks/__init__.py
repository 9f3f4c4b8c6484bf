"""Channel locks: one turn per channel across every process on the database, the rest queued.

- `vocabulary.py` `Trigger`, `Turn`, `Admission`, `KillReason`, and `TurnGuard` (what a turn
                  may do with its lock)
- `rules.py`      each lock rule, once, as a function of plain values
- `registry.py`   `ChannelLocks`: admission, /kill, recovery and the life cycle, with no SQL
- `stops.py`      /kill, stop words and Stop buttons: which turn stops, whose queued messages go
- `stopped.py`    what stops left unanswered in each channel, for the next turn's model
- `supervisor.py` the turns a process runs: a task and a lease each, released always
- `settling.py`   waiting until an owner's tasks have all ended, never spinning on ended ones
- `recovery.py`   the channels no live process serves (a closed one's queues, a dead one's
                  locks), found by the heartbeat and served
- `expiries.py`   who was dropped unanswered (too old, or cleared by another's /kill) hears
                  so, once across the processes
- `lease.py`      a running turn's lease: its kill hook, watchdogs, progress, state
- `upkeep.py`     progress written once a second; stop requests from other processes heard
- `loops.py`      the background loops (progress, stop requests, heartbeat), one life cycle
- `backend.py`    `LockBackend`: the durable half, as intents of one transaction each
- `sql.py`        those intents in SQL both engines accept, on the database's clock
- `judge.py`      a channel's lock judged in a transaction: its row, its owner alive or gone
- `progress_rows.py` each running turn's progress, many lock rows in one statement
- `rows.py`       a channel's queue and lock rows, and each message admitted once
- `instances.py`  which processes serve locks, and whether one is gone
- `sqlite.py`, `postgres.py`  what differs: stop requests polled, or announced by NOTIFY
"""

from tomori.locks.backend import LockBackend, lock_backend
from tomori.locks.registry import ChannelLocks
from tomori.locks.sqlite import SqliteLockBackend
from tomori.locks.vocabulary import (
    Admission,
    ClearedTeller,
    ExpiryTeller,
    KillCallback,
    KillOutcome,
    KillReason,
    Trigger,
    Turn,
    TurnGuard,
    TurnRunner,
    TurnStop,
)

__all__ = [
    "Admission",
    "ChannelLocks",
    "ClearedTeller",
    "ExpiryTeller",
    "KillCallback",
    "KillOutcome",
    "KillReason",
    "LockBackend",
    "SqliteLockBackend",
    "Trigger",
    "Turn",
    "TurnGuard",
    "TurnRunner",
    "TurnStop",
    "lock_backend",
]
