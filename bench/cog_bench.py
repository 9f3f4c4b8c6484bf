"""Measure the whole cog: /kill latency, full-path overhead, and 500 channels at once.

Run: `.venv/bin/python bench/cog_bench.py` (about a minute and a half). A real nextcord bot
with the cog runs on the REST recorder; the model is the local LLM server (in this process for
the kill and overhead figures, in its own process for the scale run so the bot's loop is its
own).

- Kill: the /kill interaction dispatched during a stall, to the provider connection closed
  (as the server sees it) and to the channel free again. p50 and p99 over 200 kills.
- Overhead: a 5,000-chunk answer through listener, lock, stream_once, writer and REST
  recorder, against the bare openai SDK reading the same stream on the same transport
  (aiohttp, as the provider uses) through its typed `chat.completions.create`, which builds a
  pydantic model per chunk that the provider does not. Median of paired rounds.
- Scale: 500 channels streaming at once at 20 chunks/s (every 10th stream stalls): event-loop
  lag p99, how late the stalled streams' timeouts fire past their budget, database writes and
  transactions per second, memory per active stream, and the full garbage collections that
  ran and their longest pause. First as the `tomori` command runs (the start-up heap frozen
  once the cog has started), three times: the figures are the medians, and each run's p99 is
  printed too, as with 50 stalled streams a p99 is close to the worst one and varies from run
  to run. Then
  once without that freeze, as in a bot that does not call it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai

from tests.support.llm_server import LLMServer, Reply, raw, sse, stall
from tests.support.nextcord_fake import (
    CHANNEL_ID,
    NextcordBot,
    start_nextcord_bot,
    stop_nextcord_bot,
)
from tests.support.openai_wire import chunk
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.store import SqliteDatabase

REPO = str(Path(__file__).resolve().parents[1])
KILLS = 200
CHUNKS = 5_000
ROUNDS = 5
CHANNELS = 500
SCALE_CHUNKS = 60
SCALE_RATE = 20.0
STALL_EVERY = 10
SCALE_IDLE_MS = 1_000
SCALE_RUNS = 3


@dataclass(frozen=True)
class Figure:
    name: str
    value: str
    target: str
    met: bool | None


class NoPatch:
    def setattr(self, target: Any, name: str, value: Any) -> None:
        setattr(target, name, value)


def chain(base_url: str) -> ModelChain:
    return ModelChain.from_env(
        {
            "TOMORI_MODELS": "openai:bench",
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": f"{base_url}/v1",
        }
    )


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def kill_latency(folder: Path) -> list[Figure]:
    server = LLMServer(default=lambda request: Reply(body=[sse(chunk("Thinking...\n\n")), stall()]))
    await server.start()
    bot = await start_nextcord_bot(
        Settings(db_path=folder / "kill.db"), chain(server.base_url), NoPatch()
    )
    to_close, to_free = [], []
    try:
        for _ in range(KILLS):
            bot.discord.sent_event.clear()
            bot.say(f"{bot.mention()} think")
            await bot.discord.sent_event.wait()
            connection = server.requests[-1].connection
            assert connection is not None
            started = time.monotonic()
            bot.bot._connection.parse_interaction_create(bot.kill_payload())
            await bot.chat.wait_idle(CHANNEL_ID)
            to_free.append(time.monotonic() - started)
            await connection.closed.wait()
            assert connection.closed_at is not None
            to_close.append(connection.closed_at - started)
    finally:
        await stop_nextcord_bot(bot)
        await server.close()
    return [
        Figure(
            "kill -> provider connection closed, p50",
            f"{statistics.median(to_close) * 1e3:.2f} ms",
            "",
            None,
        ),
        Figure(
            "kill -> provider connection closed, p99",
            f"{percentile(to_close, 0.99) * 1e3:.2f} ms",
            "< 20 ms",
            percentile(to_close, 0.99) < 0.020,
        ),
        Figure("kill -> channel free, p50", f"{statistics.median(to_free) * 1e3:.2f} ms", "", None),
        Figure(
            "kill -> channel free, p99",
            f"{percentile(to_free, 0.99) * 1e3:.2f} ms",
            "< 20 ms",
            percentile(to_free, 0.99) < 0.020,
        ),
    ]


def long_answer() -> Reply:
    events = [f"data: {_chunk_json(n)}\n\n" for n in range(CHUNKS)]
    events.append(
        'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
        '"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    return Reply(body=[raw("".join(events))])


def _chunk_json(n: int) -> str:
    return json.dumps(chunk("word\n\n" if n % 100 == 99 else "word "))


def _words_posted(bot: NextcordBot) -> int:
    return sum(content.count("word") for content in bot.discord.contents())


async def full_path_overhead(folder: Path) -> list[Figure]:
    server = LLMServer()
    await server.start()
    bot = await start_nextcord_bot(  # the whole answer is ~14 messages: past the default ceiling
        Settings(db_path=folder / "overhead.db", max_answer_chars=20 * 1950),
        chain(server.base_url),
        NoPatch(),
    )
    client = openai.AsyncOpenAI(
        api_key="k",
        base_url=f"{server.base_url}/v1",
        max_retries=0,
        http_client=openai.DefaultAioHttpClient(),
    )
    ratios = []
    try:
        for _ in range(ROUNDS):
            server.script(long_answer(), long_answer())
            started = time.perf_counter()
            stream = await client.chat.completions.create(
                model="bench", messages=[{"role": "user", "content": "go"}], stream=True
            )
            async with stream:
                texts = [
                    c.choices[0].delta.content
                    async for c in stream
                    if c.choices and c.choices[0].delta.content
                ]
            bare = time.perf_counter() - started
            assert len(texts) == CHUNKS
            words_before = _words_posted(bot)
            started = time.perf_counter()
            bot.say(f"{bot.mention()} go")
            await bot.settled()
            ratios.append((time.perf_counter() - started) / bare)
            assert _words_posted(bot) - words_before == CHUNKS  # the whole answer reached Discord
    finally:
        await client.close()
        await stop_nextcord_bot(bot)
        await server.close()
    ratio = statistics.median(ratios)
    return [
        Figure(f"full path / bare SDK, {CHUNKS} chunks", f"{ratio:.2f}x", "<= 1.2x", ratio <= 1.2)
    ]


@contextlib.contextmanager
def loop_lag_monitor(samples: list[float], every: float = 0.01) -> Iterator[None]:
    async def watch() -> None:
        while True:
            started = time.monotonic()
            await asyncio.sleep(every)
            samples.append(time.monotonic() - started - every)

    task = asyncio.get_running_loop().create_task(watch())
    try:
        yield
    finally:
        task.cancel()


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@contextlib.contextmanager
def full_collections(pauses: list[float]) -> Iterator[None]:
    """Record how long each full (generation 2) garbage collection stops the process."""
    started = 0.0

    def watch(phase: str, info: dict[str, int]) -> None:
        nonlocal started
        if phase == "start":
            started = time.perf_counter()
        elif info["generation"] == 2:
            pauses.append(time.perf_counter() - started)

    gc.callbacks.append(watch)
    try:
        yield
    finally:
        gc.callbacks.remove(watch)


@dataclass(frozen=True)
class ScaleRun:
    """One run of the scale test, in seconds and counts."""

    streams: int
    timed_out: int
    lag_p99: float
    late_p99: float
    notice_late_p99: float
    gc_pauses: tuple[float, ...]
    writes_per_s: float
    transactions_per_s: float
    memory_per_stream_kib: float


async def scale(folder: Path, *, frozen: bool, run: int = 0) -> ScaleRun:
    server = await asyncio.create_subprocess_exec(
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
    assert server.stdout is not None
    assert server.stdin is not None
    port = int(await server.stdout.readline())
    channels = tuple(CHANNEL_ID + 100 + n for n in range(CHANNELS))
    settings = Settings(
        db_path=folder / f"scale-{frozen}-{run}.db",
        stream_sdk_call_timeout_ms=SCALE_IDLE_MS,
        stream_first_token_timeout_ms=10_000,
        stream_abandoned_settle_timeout_ms=0,
        typing_keepalive_interval_ms=8_000,
    )
    bot = await start_nextcord_bot(
        settings, chain(f"http://127.0.0.1:{port}"), NoPatch(), channel_ids=channels
    )
    if frozen:  # what the `tomori` command does once the cog has started
        gc.collect()
        gc.freeze()
    statements: list[str] = []
    locks_store = bot.chat.runtime.database
    assert isinstance(locks_store, SqliteDatabase)
    await locks_store.connection.set_trace_callback(
        lambda sql: statements.append(sql.split(" ", 1)[0])
    )
    pauses: list[float] = []
    posted: dict[int, list[tuple[float, bool]]] = {}
    create = bot.discord._create

    def timed_create(channel_id: int, body: dict[str, Any]) -> dict[str, Any]:
        posted.setdefault(channel_id, []).append((time.monotonic(), bool(body.get("embeds"))))
        return create(channel_id, body)

    bot.discord._create = timed_create  # type: ignore[method-assign]
    lag: list[float] = []
    fired: dict[int, float] = {}

    class TimeoutTimes(logging.Handler):
        """When each stalled pass's timeout fired: stream_once logs it as it happens."""

        def emit(self, record: logging.LogRecord) -> None:
            if getattr(record, "metric", None) == "stream_sdk_timeout":
                fired[int(str(record.args[-1]))] = time.monotonic()  # type: ignore[index]

    handler = TimeoutTimes()
    logging.getLogger("tomori.generation.stream_once").addHandler(handler)
    rss_before = rss_kib()
    peak = rss_before
    started = time.monotonic()
    try:
        with loop_lag_monitor(lag), full_collections(pauses):
            for channel in channels:
                bot.say(f"{bot.mention()} stream", channel=channel)
            settling = asyncio.ensure_future(bot.settled(channels))
            while not settling.done():
                peak = max(peak, rss_kib())
                await asyncio.sleep(0.2)
            await settling
        elapsed = time.monotonic() - started
    finally:
        logging.getLogger("tomori.generation.stream_once").removeHandler(handler)
        await stop_nextcord_bot(bot)
        server.stdin.close()
        await server.wait()
        gc.unfreeze()
    budget = SCALE_IDLE_MS / 1000
    lateness, notice_lateness = [], []
    for channel, at in fired.items():
        events = posted.get(channel, [])
        sends = [when for when, is_notice in events if not is_notice and when < at]
        notices = [when for when, is_notice in events if is_notice]
        if sends:
            lateness.append(at - sends[-1] - budget)
            if notices:
                notice_lateness.append(notices[0] - sends[-1] - budget)
    streams = sum(1 for events in posted.values() if any(not notice for _, notice in events))
    writes = sum(1 for verb in statements if verb in ("UPDATE", "INSERT", "DELETE"))
    return ScaleRun(
        streams=streams,
        timed_out=len(lateness),
        lag_p99=percentile(lag, 0.99),
        late_p99=percentile(lateness, 0.99) if lateness else float("nan"),
        notice_late_p99=percentile(notice_lateness, 0.99) if notice_lateness else float("nan"),
        gc_pauses=tuple(pauses),
        writes_per_s=writes / elapsed,
        transactions_per_s=statements.count("BEGIN") / elapsed,
        memory_per_stream_kib=(peak - rss_before) / CHANNELS,
    )


def scale_figures(runs: list[ScaleRun], unfrozen: ScaleRun) -> list[Figure]:
    """The frozen runs as medians, each run's own p99 beside them: with 50 stalled streams a
    p99 is close to the worst one, so a single run says little about the next."""
    stalled = CHANNELS // STALL_EVERY
    lag = statistics.median(r.lag_p99 for r in runs)
    late = statistics.median(r.late_p99 for r in runs)
    notice = statistics.median(r.notice_late_p99 for r in runs)
    pauses = [pause for r in runs for pause in r.gc_pauses]
    first = runs[0]  # its memory figure is from a process not yet grown by other runs
    return [
        Figure(
            f"{CHANNELS} channels at {SCALE_RATE:g} chunks/s: streams that posted",
            str(min(r.streams for r in runs)),
            str(CHANNELS),
            all(r.streams == CHANNELS for r in runs),
        ),
        Figure(
            f"event-loop lag p99, median of {len(runs)} runs",
            _ms(lag),
            "< 50 ms",
            lag < 0.050,
        ),
        Figure("  ... each run", _each_ms(r.lag_p99 for r in runs), "", None),
        Figure(
            f"stalled streams timed out ({min(r.timed_out for r in runs)} of {stalled}):"
            " firing late by, p99, median",
            _ms(late),
            "< 50 ms",
            late < 0.050 and all(r.timed_out == stalled for r in runs),
        ),
        Figure("  ... each run", _each_ms(r.late_p99 for r in runs), "", None),
        Figure("  ... and their notice posted late by, p99, median", _ms(notice), "", None),
        Figure(
            "full garbage collections per run, longest pause",
            f"{len(pauses) / len(runs):.1f}, {max(pauses, default=0) * 1e3:.0f} ms",
            "",
            None,
        ),
        Figure("database rows written per second", f"{first.writes_per_s:.0f}", "", None),
        Figure("database transactions per second", f"{first.transactions_per_s:.1f}", "", None),
        Figure("memory per active stream", f"{first.memory_per_stream_kib:.1f} KiB", "", None),
        Figure("without the freeze: event-loop lag p99", _ms(unfrozen.lag_p99), "", None),
        Figure("  ... stalled streams late by, p99", _ms(unfrozen.late_p99), "", None),
        Figure(
            "  ... full garbage collections, longest",
            f"{len(unfrozen.gc_pauses)}, {max(unfrozen.gc_pauses, default=0) * 1e3:.0f} ms",
            "",
            None,
        ),
    ]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _each_ms(values: Iterable[float]) -> str:
    return " / ".join(f"{value * 1e3:.0f}" for value in values) + " ms"


async def measure() -> list[Figure]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        # scale first: its memory figure wants a process not yet grown by the other runs
        runs = [await scale(folder, frozen=True, run=n) for n in range(SCALE_RUNS)]
        unfrozen = await scale(folder, frozen=False)
        return [
            *scale_figures(runs, unfrozen),
            *await kill_latency(folder),
            *await full_path_overhead(folder),
        ]


def table(figures: list[Figure]) -> str:
    width = max(len(f.name) for f in figures)
    lines = []
    for f in figures:
        verdict = "" if f.met is None else ("ok" if f.met else "MISSED")
        lines.append(f"  {f.name:<{width}}  {f.value:>12}  {f.target:>9}  {verdict}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(asyncio.run(measure())))
