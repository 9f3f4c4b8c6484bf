"""The bot processes of bench/locks_bench.py, and the 500-channel run it measures with them.

`worker` starts bench/locks_worker.py in one role or another, pointed at a database by its
environment as a bot is. `scale` runs 500 channels at 20 chunks/s split across two such bots
on one database, the model being the LLM server in a process of its own (every 10th stream
stalls), and reads what they saw: event-loop lag p99 (the worse process's), how late the
stalled streams' timeouts fired past their budget (p99 over both processes), the transactions
and statements both processes sent the database per second (counted as they leave each
process; on PostgreSQL also the server's own count of commits), and the CPU each process and
the whole machine used, which says whether the machine itself was the limit.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg

from tests.support.postgres import PostgresServer

HERE = Path(__file__).resolve().parent
REPO = str(HERE.parent)
WORKER = str(HERE / "locks_worker.py")
CHANNELS = 500
PROCESSES = 2
SCALE_CHUNKS = 60
SCALE_RATE = 20.0
STALL_EVERY = 10
IDLE_MS = 1_000
FIRST_CHANNEL = 4_000_000_000_000_000_104


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@asynccontextmanager
async def worker(environment: dict[str, str], *args: str) -> AsyncIterator[Worker]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        WORKER,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("TOMORI_")}, **environment},
    )
    handle = Worker(process)
    try:
        assert await handle.read() == "ready"
        yield handle
    finally:
        if process.stdin is not None:
            process.stdin.close()
        await process.wait()


class Worker:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{line}\n".encode())

    async def read(self) -> str:
        assert self.process.stdout is not None
        line = (await self.process.stdout.readline()).decode().strip()
        if not line:
            raise RuntimeError(f"{WORKER} ended early (exit code {await self.process.wait()})")
        return line


@dataclass(frozen=True)
class Scale:
    streams: int
    stalled: int
    lag_p99: float
    own_lag_p99: float
    """The lag less the time the loop's thread waited for a CPU: what the process itself caused."""
    waited: float
    """The share of the run the loop's thread waited for a CPU (the worse process's)."""
    late_p99: float
    transactions_per_s: float
    statements_per_s: float
    server_commits_per_s: float | None
    machine_busy: float
    """The share of the whole machine's CPU time that was busy, any process's."""
    bots_cores: list[float]
    llm_cores: float
    database_cores: float | None
    """PostgreSQL's server processes (SQLite works inside the bot processes)."""


async def scale(environment: dict[str, str], server: PostgresServer | None) -> Scale:
    llm = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.llm_server_process",
        str(SCALE_CHUNKS),
        str(SCALE_RATE),
        str(STALL_EVERY),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    assert llm.stdout is not None
    assert llm.stdin is not None
    port = int(await llm.stdout.readline())
    share = CHANNELS // PROCESSES
    postmaster = None if server is None else _postmaster(server)
    try:
        async with AsyncExitStack() as stack:
            bots = [
                await stack.enter_async_context(worker(environment, *_scale_args(port, n, share)))
                for n in range(PROCESSES)
            ]
            commits_before = await _server_commits(server, environment)
            machine_before, llm_before = _machine_cpu(), _cpu_seconds(llm.pid)
            database_before = 0.0 if postmaster is None else _cpu_seconds(postmaster)
            for bot in bots:
                bot.send("go")
            results = [json.loads(await bot.read()) for bot in bots]
            machine, llm_cpu = _machine_cpu() - machine_before, _cpu_seconds(llm.pid) - llm_before
    finally:
        llm.stdin.close()
        await llm.wait()
    elapsed = max(result["elapsed"] for result in results)
    commits = database_cpu = None
    if server is not None and postmaster is not None:
        # The server counts a backend's commits once it is idle, and its CPU time once the
        # postmaster has reaped it (the bots' connections closed as they stopped).
        await asyncio.sleep(1.0)
        commits = (await _server_commits(server, environment) - commits_before) / elapsed
        database_cpu = (_cpu_seconds(postmaster) - database_before) / elapsed
    late = [value for result in results for value in result["late"]]
    return Scale(
        streams=sum(result["streams"] for result in results),
        stalled=len(late),
        lag_p99=max(percentile(result["lag"], 0.99) for result in results),
        own_lag_p99=max(
            percentile(
                [max(0.0, lag - wait) for lag, wait in zip(r["lag"], r["waits"], strict=True)], 0.99
            )
            for r in results
        ),
        waited=max(result["waited"] / result["elapsed"] for result in results),
        late_p99=percentile(late, 0.99) if late else float("nan"),
        transactions_per_s=sum(result["transactions"] for result in results) / elapsed,
        statements_per_s=sum(result["statements"] for result in results) / elapsed,
        server_commits_per_s=commits,
        machine_busy=machine,
        bots_cores=[result["cpu"] / result["elapsed"] for result in results],
        llm_cores=llm_cpu / elapsed,
        database_cores=database_cpu,
    )


def _cpu_seconds(pid: int) -> float:
    """CPU time of a process and of the children it has reaped (a postmaster's backends)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _machine_cpu() -> MachineCpu:
    values = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return MachineCpu(busy=sum(values) - values[3] - values[4], total=sum(values))


@dataclass(frozen=True)
class MachineCpu:
    busy: int
    total: int

    def __sub__(self, before: MachineCpu) -> float:
        """The share of the machine's CPU time that was busy between `before` and this."""
        return (self.busy - before.busy) / max(1, self.total - before.total)


def _postmaster(server: PostgresServer) -> int:
    return int((server.data / "postmaster.pid").read_text().split("\n", 1)[0])


def _scale_args(port: int, index: int, share: int) -> list[str]:
    first = FIRST_CHANNEL + index * share
    return ["scale", str(port), str(first), str(share), str(IDLE_MS)]


async def _server_commits(server: PostgresServer | None, environment: dict[str, str]) -> int:
    if server is None:
        return 0
    name = environment["TOMORI_DB_URL"].rsplit("/", 1)[1]
    connection = await asyncpg.connect(server.url())
    try:
        value = await connection.fetchval(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = $1", name
        )
    finally:
        await connection.close()
    return int(value)
