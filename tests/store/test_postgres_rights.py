"""What the database user needs on PostgreSQL: said in one line when it lacks it.

A managed or shared server often has its owner migrate once and the bot run as a user that
may only read and write the tables. That user must be able to start on a migrated database,
and on one still to migrate it must be told what is missing, not shown a traceback.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from tomori.config.database_url import DatabaseUrl
from tomori.config.settings import Settings
from tomori.store import StoreError
from tomori.store.connect import open_database

APP_PASSWORD = "app-secret-pw"
_roles = itertools.count(1)


@pytest.fixture
async def app_url(pg_url: str) -> AsyncIterator[str]:
    """A login role that owns nothing and may not create tables in the database's schema."""
    role = f"tomori_app_{next(_roles)}"
    parts = urlsplit(pg_url)
    owner = await asyncpg.connect(pg_url)
    try:
        await owner.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{APP_PASSWORD}'")
        await owner.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        netloc = f"{role}:{APP_PASSWORD}@{parts.hostname}:{parts.port}"
        yield urlunsplit(parts._replace(netloc=netloc))
    finally:
        await owner.execute(f"DROP OWNED BY {role}")
        await owner.execute(f"DROP ROLE {role}")
        await owner.close()


def settings_at(url: str) -> Settings:
    return Settings(db_url=DatabaseUrl.parse(url))


async def test_a_user_that_cannot_create_the_tables_is_told_so_in_one_line(app_url: str) -> None:
    with pytest.raises(StoreError) as refused:
        await open_database(settings_at(app_url))
    said = str(refused.value)
    assert "permission denied" in said
    assert "must be able to create tables in its schema" in said
    assert "\n" not in said
    assert APP_PASSWORD not in said


async def test_a_user_granted_the_owners_tables_runs_on_a_migrated_database(
    pg_url: str, app_url: str
) -> None:
    migrated = await open_database(settings_at(pg_url))  # the owner migrates, once
    await migrated.close()
    role = urlsplit(app_url).username
    owner = await asyncpg.connect(pg_url)
    try:
        await owner.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
        )
        await owner.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}")
    finally:
        await owner.close()
    database = await open_database(settings_at(app_url))
    try:
        async with database.transaction("channel") as tx:
            await tx.execute("DELETE FROM channel_settings WHERE channel_id = ?", ("1",))
    finally:
        await database.close()
