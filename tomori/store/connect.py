"""Open the database the settings name, and bring its schema up to date."""

from __future__ import annotations

from tomori.config import Settings
from tomori.store.base import Database
from tomori.store.sqlite import SqliteDatabase


async def open_database(settings: Settings) -> Database:
    """The SQLite file at `TOMORI_DB_PATH`, migrated; closed again if migrating fails."""
    database = await SqliteDatabase.open(
        settings.db_path, busy_timeout_ms=settings.db_busy_timeout_ms
    )
    try:
        await database.migrate()
    except BaseException:
        await database.close()
        raise
    return database
