"""The numbered schema files tomori-cog ships, one folder per database engine.

`migrations/sqlite/NNNN_name.sql` and `migrations/postgres/NNNN_name.sql` describe the same
schema in each engine's words, numbered alike. Each file is applied once, in one transaction
with the record of its number, so a failing file leaves the database as it was.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from tomori.store.base import MigrationError

Migration = tuple[int, str, str]
"""(number, file name, SQL)."""


def migrations_folder() -> Traversable:
    """Where the schema files are: inside the package in a wheel (`tomori/migrations`), at the
    repository's top level (`migrations/`) in a source checkout or an editable install."""
    packaged = resources.files("tomori") / "migrations"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "migrations"


def shipped_migrations(engine: str) -> list[tuple[str, str]]:
    """The `.sql` files shipped for `engine` ("sqlite" or "postgres"), as (file name, SQL)."""
    folder = migrations_folder() / engine
    return [
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    ]


def number_migrations(migrations: Iterable[tuple[str, str]]) -> list[Migration]:
    """Order the files by number; refuse a missing number, a duplicate or an unnumbered file."""
    numbered: dict[int, tuple[str, str]] = {}
    for name, sql in migrations:
        prefix = name.split("_", 1)[0]
        if not prefix.isdigit():
            raise MigrationError(f"migration {name} has no number: name it NNNN_what.sql")
        number = int(prefix)
        if number in numbered:
            raise MigrationError(
                f"migrations {numbered[number][0]} and {name} share number {number}"
            )
        numbered[number] = (name, sql)
    ordered = sorted(numbered.items())
    for expected, (number, (name, _)) in enumerate(ordered, start=1):
        if number != expected:
            raise MigrationError(f"migration {name} is number {number}; expected {expected}")
    return [(number, name, sql) for number, (name, sql) in ordered]


def newer_than_known(current: int, latest: int, where: str) -> MigrationError:
    return MigrationError(
        f"the database is at schema version {current}, newer than this tomori-cog knows "
        f"({latest}); upgrade tomori-cog or use another {where}"
    )
