"""SQLite's clock is the host's boot clock anchored once per boot: every process of the host
reads one clock, whenever it started, and a step of the wall clock moves none of them."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pytest

from tomori.store.host_clock import HostClock
from tomori.store.sqlite import SqliteDatabase


@dataclass
class Host:
    """A host's clocks as a test moves them: the wall clock steps, the boot clock runs on."""

    wall_s: float = 1_700_000_000.0
    boot_s: float = 5_000.0
    boot_id: str = "boot-1"

    def clock(self) -> HostClock:
        return HostClock(lambda: self.wall_s, lambda: self.boot_s, self.boot_id)

    def runs(self, seconds: float) -> None:
        self.wall_s += seconds
        self.boot_s += seconds


async def now_of(database: SqliteDatabase) -> float:
    async with database.transaction() as tx:
        return await tx.now()


async def opened(path: Path, host: Host) -> SqliteDatabase:
    database = await SqliteDatabase.open(path, clock=host.clock())
    await database.migrate()
    return database


async def test_processes_started_before_and_after_a_wall_clock_step_read_one_clock(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host = Host()
    first = await opened(db_path, host)
    try:
        assert await now_of(first) == host.wall_s  # anchored on the wall clock as it was
        host.runs(10)
        host.wall_s += 600  # NTP steps the wall clock ten minutes forward
        with caplog.at_level(logging.WARNING, logger="tomori.store.host_clock"):
            second = await opened(db_path, host)
        try:
            assert await now_of(first) == await now_of(second) == host.wall_s - 600
        finally:
            await second.close()
    finally:
        await first.close()
    assert any("600s ahead of" in record.getMessage() for record in caplog.records)


async def test_a_new_boot_takes_the_wall_clock_as_it_is_then(db_path: Path) -> None:
    host = Host()
    database = await opened(db_path, host)
    await database.close()
    host.wall_s += 7_200  # down two hours, and the wall clock right again
    host.boot_s, host.boot_id = 30.0, "boot-2"
    database = await opened(db_path, host)
    try:
        assert await now_of(database) == host.wall_s
    finally:
        await database.close()


async def test_without_a_boot_clock_the_wall_clock_serves(db_path: Path) -> None:
    host = Host()
    database = await SqliteDatabase.open(db_path, clock=HostClock(lambda: host.wall_s, None, None))
    await database.migrate()
    try:
        host.wall_s += 600
        assert await now_of(database) == host.wall_s
    finally:
        await database.close()
