"""Measure the channel locks on SQLite and on PostgreSQL, side by side.

Run: `.venv/bin/python bench/locks_bench.py` (about two minutes). PostgreSQL is a throwaway
cluster the bench starts itself, as the tests do (tests/support/postgres.py); without one
installed, one line says so and only SQLite is measured. Each figure gets a fresh database.

- Admissions per second through `ChannelLocks.submit`, a burst at once: on one channel (the
  first starts a turn, which holds the channel; every other one is queued behind it) and on as
  many channels as admissions (each starts a turn).
- /kill across processes: process A (bench/locks_worker.py) runs the turn, streaming from the
  local LLM server through the real OpenAI provider and `stream_once`; this process, B, runs
  `ChannelLocks.kill` for the channel and the LLM server, whose socket says when A closed the
  connection. From B's kill call to that moment; p50 and p99. SQLite reaches A by A's read of
  its stop requests every 250 ms; PostgreSQL by NOTIFY.
- Scale: 500 channels at 20 chunks/s split across two bot processes on one database (see
  bench/locks_processes.py), three runs of each engine, alternating: event-loop lag, stalled
  streams' timeouts late by, database transactions and statements per second, and the CPU the
  machine had to spare (how long the bots' loops waited for a CPU, and what lag is left without
  that wait).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locks_processes import (
    CHANNELS,
    PROCESSES,
    SCALE_RATE,
    STALL_EVERY,
    Scale,
    percentile,
    scale,
    worker,
)

from tests.support.llm_server import LLMServer, Reply, sse, stall
from tests.support.openai_wire import chunk
from tests.support.postgres import INSTALL_HINT, PostgresServer, find_binaries, running_postgres
from tomori.config.settings import Settings
from tomori.locks import ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.locks.sqlite import STOP_REQUEST_POLL_INTERVAL_S
from tomori.store.connect import open_database

ADMISSIONS = 500
KILLS = 100
WARM_UP_KILLS = 5
SCALE_RUNS = 3


@dataclass(frozen=True)
class Engine:
    """One engine under measurement: a fresh database for each figure."""

    name: str
    fresh: Callable[[], Awaitable[dict[str, str]]]
    """The environment of a new, empty database (as a bot process is pointed at it)."""
    server: PostgresServer | None = None


# -- admissions ------------------------------------------------------------------------------


async def admissions(environment: dict[str, str], *, one_channel: bool) -> float:
    """Admissions per second, ADMISSIONS of them submitted at once (by one requester, so its
    share of a queue is all of them)."""
    settings = Settings.from_env({**environment, "TOMORI_QUEUE_PER_MEMBER": str(ADMISSIONS)})
    database = await open_database(settings)
    hold = asyncio.Event()

    async def run(turn: Turn, guard: TurnGuard) -> None:
        await hold.wait()

    locks = ChannelLocks(lock_backend(database, settings), settings, run)
    await locks.start()
    triggers = [
        Trigger("1" if one_channel else str(n), f"admit-{n}", "bench") for n in range(ADMISSIONS)
    ]
    try:
        started = time.perf_counter()
        await asyncio.gather(*(locks.submit(trigger) for trigger in triggers))
        return ADMISSIONS / (time.perf_counter() - started)
    finally:
        await locks.close()
        await database.close()


# -- /kill across processes ------------------------------------------------------------------


async def kill_to_close(environment: dict[str, str]) -> list[float]:
    server = LLMServer(default=lambda request: Reply(body=[sse(chunk("Thinking...\n\n")), stall()]))
    await server.start()
    settings = Settings.from_env(environment)
    database = await open_database(settings)

    async def never(turn: Turn, guard: TurnGuard) -> None:
        raise AssertionError("process B runs no turn")

    killer = ChannelLocks(lock_backend(database, settings), settings, never)
    await killer.start()
    latencies: list[float] = []
    try:
        async with worker(environment, "turns", server.base_url) as turns:
            for number in range(WARM_UP_KILLS + KILLS):
                server.request_arrived.clear()
                turns.send(f"go {number}")
                await server.request_arrived.wait()
                # The first chunk is read by then; and a /kill comes at any moment of the
                # owner's 250 ms read of its stop requests on SQLite, not always just after one.
                await asyncio.sleep(random.uniform(0.01, 0.01 + STOP_REQUEST_POLL_INTERVAL_S))
                connection = server.requests[-1].connection
                assert connection is not None
                started = time.monotonic()
                outcome = await killer.kill("1", requester_id="bench")
                assert outcome.stopped, outcome
                await asyncio.wait_for(connection.closed.wait(), 5)
                assert connection.closed_at is not None
                if number >= WARM_UP_KILLS:
                    latencies.append(connection.closed_at - started)
                assert await turns.read() == f"idle {number}"
    finally:
        await killer.close()
        await database.close()
        await server.close()
    return latencies


# -- the report ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    one_channel: float
    many_channels: float
    kills: list[float]
    runs: list[Scale]

    def median(self, figure: Callable[[Scale], float]) -> float:
        return statistics.median(figure(run) for run in self.runs)

    def each(self, figure: Callable[[Scale], float]) -> str:
        return " / ".join(f"{figure(run) * 1e3:.0f}" for run in self.runs) + " ms"


async def measure(engines: list[Engine]) -> list[Figures]:
    """Each engine's figures; the scale runs alternate between the engines, so that a spell of
    other work on a shared machine does not fall on one engine's runs only."""
    figures = []
    for engine in engines:
        one = await admissions(await engine.fresh(), one_channel=True)
        many = await admissions(await engine.fresh(), one_channel=False)
        figures.append(Figures(one, many, await kill_to_close(await engine.fresh()), []))
    for _ in range(SCALE_RUNS):
        for engine, figure in zip(engines, figures, strict=True):
            figure.runs.append(await scale(await engine.fresh(), engine.server))
    return figures


Met = Callable[[Engine, Figures], bool | None]


def table(engines: list[Engine], figures: list[Figures]) -> str:
    rows: list[tuple[str, list[str], str, list[bool | None]]] = []

    def row(
        name: str, value: Callable[[Figures], str], target: str = "", met: Met | None = None
    ) -> None:
        verdicts = [
            None if met is None else met(e, f) for e, f in zip(engines, figures, strict=True)
        ]
        rows.append((name, [value(f) for f in figures], target, verdicts))

    def lag(run: Scale) -> float:
        return run.lag_p99

    def late(run: Scale) -> float:
        return run.late_p99

    stalled = CHANNELS // STALL_EVERY
    row(
        f"admissions per second, one channel ({ADMISSIONS} queued)",
        lambda f: f"{f.one_channel:.0f}",
    )
    row(
        f"admissions per second, {ADMISSIONS} channels (each a turn)",
        lambda f: f"{f.many_channels:.0f}",
    )
    row(
        f"/kill in B -> A's connection closed, p50 ({KILLS} kills)",
        lambda f: _ms(statistics.median(f.kills)),
    )
    row(
        "  ... p99",
        lambda f: _ms(percentile(f.kills, 0.99)),
        "< 20 ms (pg)",
        lambda e, f: percentile(f.kills, 0.99) < 0.020 if e.name == "postgres" else None,
    )
    row(
        f"{CHANNELS} channels at {SCALE_RATE:g} chunks/s in {PROCESSES} processes: streams posted",
        lambda f: str(min(run.streams for run in f.runs)),
        str(CHANNELS),
        lambda e, f: all(run.streams == CHANNELS for run in f.runs),
    )
    row(
        f"  event-loop lag p99 (the worse process), median of {SCALE_RUNS} runs",
        lambda f: _ms(f.median(lag)),
        "< 50 ms",
        lambda e, f: f.median(lag) < 0.050,
    )
    row("    ... each run", lambda f: f.each(lag))
    row(
        "    ... less the time the loop waited for a CPU, median",
        lambda f: _ms(f.median(lambda r: r.own_lag_p99)),
    )
    row(
        "    ... share of the run the loop waited for a CPU, median",
        lambda f: f"{f.median(lambda r: r.waited) * 100:.0f}%",
    )
    row(
        f"  stalled streams' timeouts ({stalled}) late by, p99, median",
        lambda f: _ms(f.median(late)),
        "< 50 ms",
        lambda e, f: f.median(late) < 0.050 and all(run.stalled == stalled for run in f.runs),
    )
    row("    ... each run", lambda f: f.each(late))
    row(
        "  database transactions per second",
        lambda f: f"{f.median(lambda r: r.transactions_per_s):.0f}",
    )
    row(
        "  database statements per second",
        lambda f: f"{f.median(lambda r: r.statements_per_s):.0f}",
    )
    row(
        "    ... commits per second, as the server counts them",
        lambda f: (
            "-"
            if f.runs[0].server_commits_per_s is None
            else f"{f.median(lambda r: r.server_commits_per_s or 0):.0f}"
        ),
    )
    row(
        f"  whole machine's CPU busy ({os.cpu_count()} cores)",
        lambda f: f"{f.median(lambda r: r.machine_busy) * 100:.0f}%",
    )
    row(
        "    ... cores used in the first run: bots, LLM server, PostgreSQL",
        lambda f: " ".join(
            [
                "+".join(f"{c:.2f}" for c in f.runs[0].bots_cores),
                f"{f.runs[0].llm_cores:.2f}",
                "-" if f.runs[0].database_cores is None else f"{f.runs[0].database_cores:.2f}",
            ]
        ),
    )
    width = max(len(name) for name, *_ in rows)
    column = max(14, *(len(value) + 2 for _, values, *_ in rows for value in values))
    lines = [f"  {'':<{width}}  " + "".join(f"{e.name:>{column}}" for e in engines)]
    for name, values, target, verdicts in rows:
        said = " / ".join("-" if v is None else ("ok" if v else "MISSED") for v in verdicts)
        verdict = "" if all(v is None for v in verdicts) else f"  {said}"
        cells = "".join(f"{v:>{column}}" for v in values)
        lines.append(f"  {name:<{width}}  {cells}  {target:>12}{verdict}")
    return "\n".join(lines)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


async def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        files = itertools.count(1)

        async def sqlite_file() -> dict[str, str]:
            return {"TOMORI_DB_PATH": str(folder / f"locks-{next(files)}.db")}

        engines = [Engine("sqlite", sqlite_file)]
        binaries = find_binaries(None)
        if binaries is None:
            print(f"SQLite only: {INSTALL_HINT}")
            print(table(engines, await measure(engines)))
            return
        with running_postgres(binaries) as server:

            async def postgres_database() -> dict[str, str]:
                return {"TOMORI_DB_URL": server.url(await server.create_database())}

            engines.append(Engine("postgres", postgres_database, server))
            print(table(engines, await measure(engines)))


if __name__ == "__main__":
    asyncio.run(main())
