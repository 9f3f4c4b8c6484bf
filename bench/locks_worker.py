"""A bot process for bench/locks_bench.py: the figures that need a second process on the database.

    python bench/locks_worker.py turns BASE_URL
    python bench/locks_worker.py scale PORT FIRST_CHANNEL CHANNELS IDLE_MS

The database is the one the environment names (`TOMORI_DB_PATH` or `TOMORI_DB_URL`), as for
a bot. Commands come on stdin, one a line; answers go to stdout, one a line.

- `turns`: the process that runs the turns /kill stops. `go N` submits message N in channel 1;
  the turn streams from the local LLM server at BASE_URL through the OpenAI provider and
  `stream_once`, and `idle N` is printed once the channel is free again.
- `scale`: a whole bot (the cog on nextcord, Discord faked) for CHANNELS channels from
  FIRST_CHANNEL, models from the LLM server process on PORT. It prints `ready`, waits for `go`,
  sends one message per channel, and prints what it saw as one JSON line: event-loop lag
  samples, how late each stalled stream's timeout fired past IDLE_MS, how many streams posted,
  and the database transactions and statements it sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tomori_cog.chat
from tests.support.databases import RecordingDatabase
from tests.support.memory_channel import MemoryChannel, MemoryStreamWriter
from tests.support.nextcord_fake import start_nextcord_bot, stop_nextcord_bot
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.generation.state import TurnState
from tomori.generation.stream_once import stream_once
from tomori.locks import ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.providers.base import ContextItem, Role, StreamRequest
from tomori.providers.openai import OpenAIProvider
from tomori.store import Database
from tomori.store.connect import open_database

REQUEST = StreamRequest(model="bench-model", context=(ContextItem(Role.USER, "go"),))


class NoPatch:
    def setattr(self, target: Any, name: str, value: Any) -> None:
        setattr(target, name, value)


@contextlib.asynccontextmanager
async def commands() -> AsyncIterator[asyncio.StreamReader]:
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), sys.stdin
    )
    try:
        yield reader
    finally:
        transport.close()


def answer(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def turns(base_url: str) -> None:
    settings = replace(
        Settings.from_env(os.environ),
        stream_first_token_timeout_ms=60_000,
        stream_sdk_call_timeout_ms=60_000,
    )
    provider = OpenAIProvider(api_key="k", base_url=f"{base_url}/v1")

    async def run(turn: Turn, guard: TurnGuard) -> None:
        channel = MemoryChannel()
        state = TurnState(turn.channel_id, notices=channel)
        writer = MemoryStreamWriter(channel, state)
        try:
            await stream_once(provider, REQUEST, writer, state, guard, settings)
        finally:
            await writer.aclose()

    database = await open_database(settings)
    locks = ChannelLocks(lock_backend(database, settings), settings, run)
    await locks.start()
    answer("ready")
    try:
        async with commands() as reader:
            while line := (await reader.readline()).decode().split():
                number = line[1]
                await locks.submit(Trigger("1", f"kill-{number}", "bench"))
                await locks.wait_idle("1")
                answer(f"idle {number}")
    finally:
        await locks.close()
        await provider.aclose()
        await database.close()


def cpu_wait() -> float:
    """How long this thread has waited for a CPU while ready to run, in seconds: the kernel's
    run-queue delay, which no code of this process can cause or cure."""
    return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e9


@contextlib.contextmanager
def loop_lag(samples: list[float], waits: list[float], every: float = 0.01) -> Iterator[None]:
    """Sample the event loop's lag, and how much of each sample was spent waiting for a CPU."""

    async def watch() -> None:
        while True:
            started, waited = time.monotonic(), cpu_wait()
            await asyncio.sleep(every)
            samples.append(time.monotonic() - started - every)
            waits.append(cpu_wait() - waited)

    task = asyncio.get_running_loop().create_task(watch())
    try:
        yield
    finally:
        task.cancel()


async def scale(port: int, first: int, count: int, idle_ms: int) -> None:
    settings = replace(
        Settings.from_env(os.environ),
        stream_sdk_call_timeout_ms=idle_ms,
        stream_first_token_timeout_ms=10_000,
        stream_abandoned_settle_timeout_ms=0,
        typing_keepalive_interval_ms=8_000,
    )
    recorded: list[RecordingDatabase] = []

    async def recording_database(settings: Settings) -> Database:
        database = RecordingDatabase(await open_database(settings))
        recorded.append(database)
        return database

    NoPatch().setattr(tomori_cog.chat, "open_database", recording_database)
    chain = ModelChain.from_env(
        {
            "TOMORI_MODELS": "openai:bench",
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        }
    )
    channels = tuple(range(first, first + count))
    bot = await start_nextcord_bot(settings, chain, NoPatch(), channel_ids=channels)
    gc.collect()
    gc.freeze()  # what the `tomori` command does once the cog has started
    posted: dict[int, list[tuple[float, bool]]] = {}
    create = bot.discord._create

    def timed_create(channel_id: int, body: dict[str, Any]) -> dict[str, Any]:
        posted.setdefault(channel_id, []).append((time.monotonic(), bool(body.get("embeds"))))
        return create(channel_id, body)

    bot.discord._create = timed_create  # type: ignore[method-assign]
    fired: dict[int, float] = {}

    class TimeoutTimes(logging.Handler):
        """When each stalled pass's timeout fired: stream_once logs it as it happens."""

        def emit(self, record: logging.LogRecord) -> None:
            if getattr(record, "metric", None) == "stream_sdk_timeout":
                fired[int(str(record.args[-1]))] = time.monotonic()  # type: ignore[index]

    logging.getLogger("tomori.generation.stream_once").addHandler(TimeoutTimes())
    lag: list[float] = []
    waits: list[float] = []
    answer("ready")
    async with commands() as reader:
        await reader.readline()
        database = recorded[0]
        transactions, statements = len(database.transactions), _statements(database)
        started, cpu, waited = time.monotonic(), time.process_time(), cpu_wait()
        with loop_lag(lag, waits):
            for channel in channels:
                bot.say(f"{bot.mention()} stream", channel=channel)
            await bot.settled(channels)
        elapsed, cpu = time.monotonic() - started, time.process_time() - cpu
        waited = cpu_wait() - waited
        transactions = len(database.transactions) - transactions
        statements = _statements(database) - statements
    await stop_nextcord_bot(bot)
    gc.unfreeze()
    late = []
    for channel, at in fired.items():
        sends = [when for when, notice in posted.get(channel, []) if not notice and when < at]
        if sends:
            late.append(at - sends[-1] - idle_ms / 1000)
    streams = sum(1 for events in posted.values() if any(not notice for _, notice in events))
    result = {
        "lag": lag,
        "waits": waits,
        "waited": waited,
        "late": late,
        "streams": streams,
        "stalled": len(fired),
        "elapsed": elapsed,
        "cpu": cpu,
        "transactions": transactions,
        "statements": statements,
    }
    answer(json.dumps(result))


def _statements(database: RecordingDatabase) -> int:
    return len(database.statements) + sum(len(tx) for tx in database.transactions)


if __name__ == "__main__":
    shown = logging.StreamHandler()
    shown.setLevel(logging.ERROR)  # not the warning each stalled stream's timeout logs
    logging.basicConfig(handlers=[shown])
    role, *args = sys.argv[1:]
    if role == "turns":
        asyncio.run(turns(args[0]))
    else:
        port, first, count, idle_ms = (int(arg) for arg in args)
        asyncio.run(scale(port, first, count, idle_ms))
