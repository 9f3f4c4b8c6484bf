"""Run one `stream_once` pass inside a real turn of a real lock registry on a real SQLite file."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from tests.support.llm_server import LLMServer
from tests.support.memory_channel import MemoryChannel, MemoryStreamWriter
from tomori.config.settings import Settings
from tomori.delivery.port import StreamWriter
from tomori.generation.results import StreamResult, StreamStatus, TimeoutPhase
from tomori.generation.state import TurnState
from tomori.generation.stream_once import stream_once
from tomori.locks import ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.locks.lease import Lease
from tomori.providers.base import (
    ContextItem,
    Provider,
    ProviderError,
    ProviderEvent,
    Role,
    StreamRequest,
)
from tomori.store import Database

CHANNEL = "200"
REQUEST = StreamRequest(model="test-model", context=(ContextItem(Role.USER, "hi"),))
LONG = 30.0  # a budget no test should ever reach


def budgets(first: float = LONG, idle: float = LONG, settle: float = LONG) -> Settings:
    return Settings(
        stream_first_token_timeout_ms=int(first * 1000),
        stream_sdk_call_timeout_ms=int(idle * 1000),
        stream_abandoned_settle_timeout_ms=int(settle * 1000),
    )


@dataclass
class PassRun:
    channel: MemoryChannel
    state: TurnState
    result: StreamResult | None = None
    error: BaseException | None = None
    elapsed: float = 0.0
    leftovers: list[str] = field(default_factory=list)


Meanwhile = Callable[[ChannelLocks], Awaitable[None]]


class Harness:
    """Runs a pass inside a real turn of a real lock registry on a real SQLite file."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._runs = 0
        self.locks: ChannelLocks | None = None

    async def run(
        self,
        provider: Provider,
        settings: Settings,
        *,
        channel: MemoryChannel | None = None,
        suppress: bool = False,
        meanwhile: Meanwhile | None = None,
        request: StreamRequest = REQUEST,
        writer: Callable[[TurnState], StreamWriter] | None = None,
    ) -> PassRun:
        """`writer`: what the pass writes into, given its turn's state (else a memory one)."""
        channel = channel or MemoryChannel()
        state = TurnState(CHANNEL, notices=channel, suppress_user_errors=suppress)
        run = PassRun(channel, state)

        async def turn(_: Turn, guard: TurnGuard) -> None:
            assert self.locks is not None
            writing = writer(run.state) if writer else MemoryStreamWriter(run.channel, run.state)
            started = time.monotonic()
            await asyncio.sleep(0)  # as the cog reads Discord first: a /kill can land here
            try:
                run.result = await stream_once(
                    provider, request, writing, run.state, guard, settings
                )
            except Exception as error:
                run.error = error
            run.elapsed = time.monotonic() - started
            run.leftovers = live_pass_machinery()
            assert isinstance(guard, Lease)
            if guard._kill is not None:
                run.leftovers.append("kill callback")
            await writing.aclose()

        self.locks = ChannelLocks(lock_backend(self._database, settings), settings, turn)
        await self.locks.start()
        try:
            self._runs += 1  # each run answers a message of its own: one is admitted only once
            await self.locks.submit(Trigger(CHANNEL, f"m{self._runs}"))
            if meanwhile is not None:
                await meanwhile(self.locks)
            await self.locks.wait_idle(CHANNEL)
        finally:
            await self.locks.close()
        return run


def live_pass_machinery() -> list[str]:
    """Timers and tasks of a pass that are still alive."""
    loop = asyncio.get_running_loop()
    scheduled = getattr(loop, "_scheduled", [])
    leftovers = [
        "timer" for handle in scheduled if not handle.cancelled() and "RollingTimer" in repr(handle)
    ]
    leftovers += [
        task.get_name()
        for task in asyncio.all_tasks()
        if task.get_name().startswith("tomori-generation") and not task.done()
    ]
    return leftovers


def kill_after(delay: float) -> Meanwhile:
    async def meanwhile(locks: ChannelLocks) -> None:
        await asyncio.sleep(delay)
        await locks.kill(CHANNEL, requester_id="42")

    return meanwhile


async def collect(provider: Provider, request: StreamRequest = REQUEST) -> list[ProviderEvent]:
    """Every event of one provider stream, read to its end."""
    return [event async for event in provider.stream(request)]


async def collect_until_error(
    provider: Provider, request: StreamRequest = REQUEST
) -> tuple[list[ProviderEvent], ProviderError]:
    """The events a provider stream yielded before it failed, and how it failed."""
    events: list[ProviderEvent] = []

    async def read_to_the_error() -> None:
        async for event in provider.stream(request):
            events.append(event)

    with pytest.raises(ProviderError) as raised:
        await read_to_the_error()
    return events, raised.value


async def stall_and_check_the_socket(
    provider: Provider, server: LLMServer, harness: Harness, phase: TimeoutPhase
) -> None:
    """A stalled pass is ended by the rolling timeout in `phase`, and the server sees the client
    close the connection. Shared by both providers."""
    run = await harness.run(provider, budgets(first=0.3, idle=0.15, settle=0.05))
    assert run.result is not None
    assert run.result.status is StreamStatus.TIMEOUT
    assert run.result.data is not None
    assert getattr(run.result.data, "phase", None) is phase
    assert run.elapsed < 5
    await asyncio.wait_for(server.connections[0].closed.wait(), 1)
    assert server.connections[0].closed_by_client


async def kill_mid_stream_and_check_the_socket(
    provider: Provider, server: LLMServer, harness: Harness
) -> None:
    """/kill a pass once the server is streaming: it stops with the text so far, and the
    server sees the client close the connection within 100 ms. Shared by both providers."""
    killed_at: list[float] = []

    async def kill_once_streaming(locks: ChannelLocks) -> None:
        await server.request_arrived.wait()
        await asyncio.sleep(0.1)
        killed_at.append(time.monotonic())
        await locks.kill(CHANNEL, requester_id="42")

    run = await harness.run(provider, budgets(), meanwhile=kill_once_streaming)
    assert run.result is not None
    assert run.result.status is StreamStatus.STOPPED_BY_USER
    assert run.result.text == "partial\n"
    connection = server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), 1)
    assert connection.closed_by_client
    assert connection.closed_at is not None
    assert connection.closed_at - killed_at[0] < 0.1
