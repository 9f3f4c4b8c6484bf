"""Open the database the settings name, and bring its schema up to date."""

from __future__ import annotations

from tomori.config.parsers import install_extra
from tomori.config.settings import Settings
from tomori.store.base import Database, Failed, StoreError, unheard
from tomori.store.sqlite import SqliteDatabase

POSTGRES_EXTRA = (
    f"TOMORI_DB_URL needs the postgres extra, which is not installed (its driver, asyncpg, is "
    f"missing): {install_extra('postgres')}"
)


async def open_database(settings: Settings, *, failed: Failed = unheard) -> Database:
    """PostgreSQL at `TOMORI_DB_URL` if set, else the SQLite file at `TOMORI_DB_PATH`; migrated,
    and closed again if migrating fails. `failed` is told of each of its errors."""
    database: Database
    if settings.db_url is not None:
        try:
            from tomori.store.postgres import PostgresDatabase
        except ImportError as error:
            raise StoreError(POSTGRES_EXTRA) from error
        database = await PostgresDatabase.open(settings.db_url, failed)
    else:
        database = await SqliteDatabase.open(
            settings.db_path, busy_timeout_ms=settings.db_busy_timeout_ms, failed=failed
        )
    try:
        await database.migrate()
    except BaseException:
        await database.close()
        raise
    return database
