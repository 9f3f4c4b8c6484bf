"""Durable state: one `Database` interface, SQLite (the embedded default) or PostgreSQL."""

from tomori.store.base import Database, MigrationError, Row, StoreError, Transaction
from tomori.store.sqlite import SqliteDatabase

__all__ = ["Database", "MigrationError", "Row", "SqliteDatabase", "StoreError", "Transaction"]
