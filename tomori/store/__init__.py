"""Durable state: one `Database` interface, SQLite (the embedded default) or PostgreSQL.

- `base.py`       the `Database` and `Transaction` protocols (SQL both engines accept)
- `sqlite.py`     SQLite: one file, WAL, a busy timeout; the embedded default
- `host_clock.py` SQLite's clock: the host's boot clock anchored once per boot, never stepped
- `first_come.py` the SQLite connection's lock: the earliest message's statements go first
- `postgres.py`   PostgreSQL: an asyncpg pool, advisory locks per channel, the server's clock
- `postgres_schema.py` PostgreSQL's migrations, applied once between processes starting together
- `migrations.py` the numbered schema files, one folder per engine, applied once each
- `connect.py`    `open_database`: the database the settings name, migrated
- `sealed.py`     a secret the database keeps sealed (a webhook's token), under a key it lacks
- `retry.py`      a write the database is busy or away for, retried in arrival order
- `outage.py`     an outage logged once per kind of failure and once when it ends
"""

from tomori.store.base import Database, MigrationError, Row, StoreError, Transaction
from tomori.store.sqlite import SqliteDatabase

__all__ = ["Database", "MigrationError", "Row", "SqliteDatabase", "StoreError", "Transaction"]
