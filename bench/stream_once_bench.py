"""Measure stream_once: per-chunk overhead, kill latency, database writes per streamed second.

Run: `.venv/bin/python bench/stream_once_bench.py` (about 15 s). Figures are ratios against a
baseline run in the same process, or counts, so they compare across machines.

- Overhead: the same provider events consumed bare (`async for` appending the text) and through
  `stream_once` (lock registry, watchdog, rolling timer, writer), best of several rounds. Two
  providers: one yielding prepared events (the worst case for the ratio: nothing but our own
  work), and one decoding an OpenAI-style JSON chunk per event, as any real provider must.
- Kill latency: `/kill` (`ChannelLocks.kill`) called during a stall, to `stream_once` returning.
- Database writes: UPDATEs of the lock row while one channel streams 3 s at 500 chunks/s.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.memory_channel import MemoryChannel, MemoryStreamWriter
from tomori.config.settings import Settings
from tomori.generation.results import StreamStatus
from tomori.generation.state import TurnState
from tomori.generation.stream_once import stream_once
from tomori.locks import ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.providers.base import (
    ContextItem,
    ProviderEvent,
    Role,
    StreamRequest,
    TextDelta,
)
from tomori.store import SqliteDatabase as Store

CHANNEL = "1"
REQUEST = StreamRequest(model="bench", context=(ContextItem(Role.USER, "go"),))
SETTINGS = Settings(stream_first_token_timeout_ms=60_000, stream_sdk_call_timeout_ms=60_000)
CHUNKS = 10_000
ROUNDS = 21


class PreparedEvents:
    name = "prepared"

    def __init__(self, chunks: int, pace: float = 0.0, stall_after: int | None = None) -> None:
        # A newline every 200 chunks: the writer sends a message per line, as Discord would.
        self._events = [TextDelta("word\n" if n % 200 == 199 else "word ") for n in range(chunks)]
        self._pace = pace
        self._stall_after = stall_after

    async def aclose(self) -> None:
        pass

    async def stream(self, request: StreamRequest) -> AsyncGenerator[ProviderEvent, None]:
        for index, event in enumerate(self._events):
            if index == self._stall_after:
                await asyncio.Event().wait()
            if self._pace:
                await asyncio.sleep(self._pace)
            yield event


class DecodedEvents:
    name = "decoded"

    def __init__(self, chunks: int) -> None:
        self._lines = [
            json.dumps(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"content": "word\n" if n % 200 == 199 else "word "},
                            "finish_reason": None,
                        }
                    ],
                }
            )
            for n in range(chunks)
        ]

    async def aclose(self) -> None:
        pass

    async def stream(self, request: StreamRequest) -> AsyncGenerator[ProviderEvent, None]:
        for line in self._lines:
            yield TextDelta(json.loads(line)["choices"][0]["delta"]["content"])


Provider = PreparedEvents | DecodedEvents


async def bare(provider: Provider) -> float:
    started = time.perf_counter()
    texts: list[str] = []
    async for event in provider.stream(REQUEST):
        if isinstance(event, TextDelta):
            texts.append(event.text)
    return time.perf_counter() - started


async def in_a_turn(
    store: Store, work: Callable[[ChannelLocks, TurnGuard], Awaitable[None]]
) -> None:
    locks: ChannelLocks

    async def turn(_: Turn, guard: TurnGuard) -> None:
        await work(locks, guard)

    locks = ChannelLocks(lock_backend(store, SETTINGS), SETTINGS, turn)
    await locks.start()
    try:
        await locks.submit(Trigger(CHANNEL, "m"))
        await locks.wait_idle(CHANNEL)
    finally:
        await locks.close()


async def through_stream_once(store: Store, provider: Provider) -> float:
    elapsed: list[float] = []

    async def work(locks: ChannelLocks, guard: TurnGuard) -> None:
        channel = MemoryChannel()
        state = TurnState(CHANNEL, notices=channel)
        writer = MemoryStreamWriter(channel, state)
        started = time.perf_counter()
        result = await stream_once(provider, REQUEST, writer, state, guard, SETTINGS)
        elapsed.append(time.perf_counter() - started)
        assert result.status is StreamStatus.COMPLETED

    await in_a_turn(store, work)
    return elapsed[0]


async def overhead(store: Store, provider: Provider) -> tuple[float, float]:
    """Median over rounds of (our time - bare time) per chunk, and of our time / bare time.

    Each round runs both back to back, so drifts of the machine's speed cancel out.
    """
    extra_us, ratios = [], []
    for _ in range(ROUNDS):
        base = await bare(provider)
        full = await through_stream_once(store, provider)
        extra_us.append((full - base) / CHUNKS * 1e6)
        ratios.append(full / base)
    return statistics.median(extra_us), statistics.median(ratios)


async def kill_latencies(store: Store, kills: int) -> list[float]:
    latencies: list[float] = []

    async def work(locks: ChannelLocks, guard: TurnGuard) -> None:
        channel = MemoryChannel()
        state = TurnState(CHANNEL, notices=channel)
        writer = MemoryStreamWriter(channel, state)
        provider = PreparedEvents(10, stall_after=5)
        passing = asyncio.create_task(
            stream_once(provider, REQUEST, writer, state, guard, SETTINGS)
        )
        await asyncio.sleep(0.002)
        returned: list[float] = []
        passing.add_done_callback(lambda _: returned.append(time.perf_counter()))
        started = time.perf_counter()
        await locks.kill(CHANNEL, requester_id="bench")
        result = await passing
        latencies.append(returned[0] - started)
        assert result.status is StreamStatus.STOPPED_BY_USER
        await writer.aclose()

    for _ in range(kills):
        await in_a_turn(store, work)
    return latencies


async def writes_while_streaming(store: Store, seconds: float, rate: int) -> int:
    updates: list[str] = []

    async def work(locks: ChannelLocks, guard: TurnGuard) -> None:
        channel = MemoryChannel()
        state = TurnState(CHANNEL, notices=channel)
        writer = MemoryStreamWriter(channel, state)
        provider = PreparedEvents(int(seconds * rate), pace=1 / rate)
        await store.connection.set_trace_callback(
            lambda sql: updates.append(sql) if sql.startswith("UPDATE channel_locks") else None
        )
        await stream_once(provider, REQUEST, writer, state, guard, SETTINGS)

    await in_a_turn(store, work)
    return len(updates)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = await Store.open(Path(folder) / "bench.db")
        await store.migrate()
        try:
            print(
                f"stream_once overhead per chunk, {CHUNKS} chunks, median of {ROUNDS} paired rounds"
            )
            for provider in (PreparedEvents(CHUNKS), DecodedEvents(CHUNKS)):
                extra_us, ratio = await overhead(store, provider)
                print(
                    f"  {provider.name:9} provider: stream_once / bare {ratio:.2f}x "
                    f"(+{extra_us:.2f} us per chunk)"
                )
            latencies = await kill_latencies(store, 200)
            print(
                f"kill latency over {len(latencies)} kills: p50 "
                f"{statistics.median(latencies) * 1e3:.2f} ms   p99 "
                f"{percentile(latencies, 0.99) * 1e3:.2f} ms"
            )
            writes = await writes_while_streaming(store, 3.0, 500)
            print(f"lock row writes, one channel, 3 s at 500 chunks/s: {writes}")
        finally:
            await store.close()


if __name__ == "__main__":
    asyncio.run(main())
