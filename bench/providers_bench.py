"""Measure the providers against their SDKs read bare, over real sockets to a local server.

Run: `.venv/bin/python bench/providers_bench.py` (about 30 s).

- Overhead: the same 5,000-chunk server-sent stream read by the SDK bare (openai's
  `chat.completions.create(stream=True)`, google-genai's `generate_content_stream`, iterating
  and keeping the text) and through our provider. The server sends the whole body in one write,
  so its own cost does not dilute the ratio. Median of paired rounds. The openai baseline uses
  the provider's transport (aiohttp), so the ratio is our own overhead; a second line compares
  the SDK on its default httpx2 transport, which the provider does not use. The baseline is the
  typed `create` a bot author would write; the provider reads the chunks as plain JSON instead
  of the SDK's models (see `tomori/providers/openai.py`), so a ratio under 1 is expected.
- Kill: `/kill` during a stalled stream, through the lock registry and `stream_once`, to the
  moment the server sees the connection close. 100 kills per provider.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai
from google import genai
from google.genai import types

from tests.support.gemini_wire import response, text_part
from tests.support.llm_server import LLMServer, Reply, raw, sse, stall
from tests.support.memory_channel import MemoryChannel, MemoryStreamWriter
from tests.support.openai_wire import chunk
from tomori.config.settings import Settings
from tomori.generation.results import StreamStatus
from tomori.generation.state import TurnState
from tomori.generation.stream_once import stream_once
from tomori.locks import ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.providers.base import ContextItem, Provider, Role, StreamRequest, TextDelta
from tomori.providers.gemini import GeminiProvider
from tomori.providers.openai import OpenAIProvider
from tomori.store import SqliteDatabase as Store

CHUNKS = 5_000
ROUNDS = 7
KILLS = 100
KEY = "bench-key"
REQUEST = StreamRequest(model="bench-model", context=(ContextItem(Role.USER, "go"),))
SETTINGS = Settings(stream_first_token_timeout_ms=60_000, stream_sdk_call_timeout_ms=60_000)


class Timed(NamedTuple):
    """How long one read of the stream took, and how many texts it read."""

    seconds: float
    texts: int


def one_write(events: list[str]) -> Reply:
    return Reply(body=[raw("".join(events))])


def openai_body() -> Reply:
    events = [f"data: {_json(chunk(f'w{n} '))}\n\n" for n in range(CHUNKS)]
    events.append(f"data: {_json(chunk(finish='stop'))}\n\ndata: [DONE]\n\n")
    return one_write(events)


def gemini_body() -> Reply:
    events = [f"data: {_json(response(text_part(f'w{n} ')))}\n\n" for n in range(CHUNKS)]
    events.append(f"data: {_json(response(text_part('.'), finish='STOP'))}\n\n")
    return one_write(events)


def _json(data: object) -> str:
    return json.dumps(data)


async def bare_openai(server: LLMServer, *, default_transport: bool = False) -> Timed:
    client = openai.AsyncOpenAI(
        api_key=KEY,
        base_url=f"{server.base_url}/v1",
        max_retries=0,
        http_client=None if default_transport else openai.DefaultAioHttpClient(),
    )
    try:
        started = time.perf_counter()
        stream = await client.chat.completions.create(
            model="bench-model", messages=[{"role": "user", "content": "go"}], stream=True
        )
        texts = []
        async with stream:
            async for item in stream:
                if item.choices and item.choices[0].delta.content:
                    texts.append(item.choices[0].delta.content)
        return Timed(time.perf_counter() - started, len(texts))
    finally:
        await client.close()


async def bare_httpx2_openai(server: LLMServer) -> Timed:
    return await bare_openai(server, default_transport=True)


async def bare_gemini(server: LLMServer) -> Timed:
    client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=server.base_url))
    try:
        started = time.perf_counter()
        texts = []
        async for item in await client.aio.models.generate_content_stream(
            model="bench-model", contents="go"
        ):
            if item.text:
                texts.append(item.text)
        return Timed(time.perf_counter() - started, len(texts))
    finally:
        await client.aio.aclose()


async def ours(provider: Provider) -> Timed:
    started = time.perf_counter()
    texts = []
    async for event in provider.stream(REQUEST):
        if isinstance(event, TextDelta):
            texts.append(event.text)
    return Timed(time.perf_counter() - started, len(texts))


async def overhead(
    server: LLMServer,
    body: Callable[[], Reply],
    bare: Callable[[LLMServer], Awaitable[Timed]],
    provider: Provider,
) -> float:
    ratios = []
    for _ in range(ROUNDS):
        server.script(body(), body())
        base = await bare(server)
        full = await ours(provider)
        assert full.texts == base.texts >= CHUNKS, (base, full)  # both read the whole stream
        ratios.append(full.seconds / base.seconds)
    return statistics.median(ratios)


async def kill_to_close(
    server: LLMServer, provider: Provider, store: Store, reply: Reply
) -> list[float]:
    latencies: list[float] = []
    locks: ChannelLocks

    async def turn(_: Turn, guard: TurnGuard) -> None:
        channel = MemoryChannel()
        state = TurnState("1", notices=channel)
        writer = MemoryStreamWriter(channel, state)
        server.request_arrived.clear()
        passing = asyncio.create_task(
            stream_once(provider, REQUEST, writer, state, guard, SETTINGS)
        )
        await server.request_arrived.wait()
        await asyncio.sleep(0.01)
        started = time.monotonic()
        await locks.kill("1", requester_id="bench")
        result = await passing
        assert result.status is StreamStatus.STOPPED_BY_USER
        connection = server.requests[-1].connection
        assert connection is not None
        await asyncio.wait_for(connection.closed.wait(), 5)
        assert connection.closed_at is not None
        latencies.append(connection.closed_at - started)
        await writer.aclose()

    locks = ChannelLocks(lock_backend(store, SETTINGS), SETTINGS, turn)
    await locks.start()
    try:
        for _ in range(KILLS):
            server.script(reply)
            await locks.submit(Trigger("1", "m"))
            await locks.wait_idle("1")
    finally:
        await locks.close()
    return latencies


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


async def main() -> None:
    server = LLMServer()
    await server.start()
    folder = tempfile.TemporaryDirectory()
    store = await Store.open(Path(folder.name) / "bench.db")
    await store.migrate()
    openai_provider = OpenAIProvider(api_key=KEY, base_url=f"{server.base_url}/v1")
    gemini_provider = GeminiProvider(api_key=KEY, base_url=server.base_url)
    try:
        print(f"provider overhead, {CHUNKS} chunks, median of {ROUNDS} paired rounds")
        ratio = await overhead(server, openai_body, bare_openai, openai_provider)
        print(f"  openai  provider / SDK bare, same transport: {ratio:.2f}x")
        ratio = await overhead(server, openai_body, bare_httpx2_openai, openai_provider)
        print(f"  openai  provider / SDK bare on its default httpx2 transport: {ratio:.2f}x")
        ratio = await overhead(server, gemini_body, bare_gemini, gemini_provider)
        print(f"  gemini  provider / SDK bare: {ratio:.2f}x")
        print(f"kill to connection closed (seen by the server), {KILLS} kills")
        stalled: list[tuple[str, Provider, Reply]] = [
            ("openai", openai_provider, Reply(body=[sse(chunk("hi\n")), stall()])),
            ("gemini", gemini_provider, Reply(body=[sse(response(text_part("hi\n"))), stall()])),
        ]
        for name, provider, reply in stalled:
            latencies = await kill_to_close(server, provider, store, reply)
            print(
                f"  {name}  p50 {statistics.median(latencies) * 1e3:.2f} ms   "
                f"p99 {p99(latencies) * 1e3:.2f} ms"
            )
    finally:
        await openai_provider.aclose()
        await gemini_provider.aclose()
        await store.close()
        await server.close()
        folder.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
