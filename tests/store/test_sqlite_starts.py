"""Several processes starting together on one new SQLite file: each waits its turn, none fails.

SQLite refuses at once (no busy wait) a connection that switches a new file to WAL while
another does the same; a bot whose processes start together must not fail its start on it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tomori.store.sqlite import SqliteDatabase

ROUNDS = 40
TOGETHER = 6


@pytest.mark.slow  # forty rounds of six connections
async def test_connections_opened_together_on_a_new_file_all_open_and_migrate(
    tmp_path: Path,
) -> None:
    for round_ in range(ROUNDS):
        path = tmp_path / f"new-{round_}.db"
        opened = await asyncio.gather(*(SqliteDatabase.open(path) for _ in range(TOGETHER)))
        try:
            versions = await asyncio.gather(*(database.migrate() for database in opened))
        finally:
            await asyncio.gather(*(database.close() for database in opened))
        assert len(set(versions)) == 1


START = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from tomori.config.settings import Settings
    from tomori.locks import ChannelLocks, lock_backend
    from tomori.store.connect import open_database

    async def turn(turn, guard):
        pass

    async def main(path):
        print("ready", flush=True)  # imported: told when to start, as the others are
        at = float(sys.stdin.readline())
        await asyncio.sleep(max(0.0, at - time.time() - 0.05))
        while time.time() < at:  # the last moments spun, so that all start within a millisecond
            pass
        settings = Settings(db_path=Path(path))
        database = await open_database(settings)  # as bot.py checks it before connecting
        await database.close()
        database = await open_database(settings)  # as the cog opens it
        locks = ChannelLocks(lock_backend(database, settings), settings, turn)
        await locks.start()
        await locks.close()
        await database.close()

    asyncio.run(main(sys.argv[1]))
    """
)


@pytest.mark.slow
def test_processes_started_together_on_a_new_file_all_start(tmp_path: Path) -> None:
    for round_ in range(3):  # each round ~5 s of imports; the file race is in every round
        path = tmp_path / f"bot-{round_}.db"
        starts = [
            subprocess.Popen(
                [sys.executable, "-c", START, str(path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(6)
        ]
        for start in starts:  # every process ready (however long its imports took) ...
            assert start.stdout is not None
            assert start.stdout.readline() == "ready\n"
        at = time.time() + 0.1  # ... then all at once
        for start in starts:
            _, errors = start.communicate(f"{at}\n", timeout=60)
            assert start.returncode == 0, errors
