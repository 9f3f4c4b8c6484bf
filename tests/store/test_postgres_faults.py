"""PostgreSQL faults, on a real server the tests stop, start, freeze and cut off.

Through the cog, as users meet them: the server restarting (or every connection cut from its
side, or the server going silent) while an answer streams and more messages arrive. The answer
streaming is finished, the messages sent meanwhile are answered once it is back, in order, each
once (or, past what is held in memory or past their age, told that they failed), and the
channel works after; the database keeps no lock behind.

Between processes: a /kill is announced, not polled, even after the listening connection was
cut; a process that outlived an outage keeps its channels; hosts whose clocks disagree by a
minute neither steal nor keep a lock.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import statistics
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.cog_settings import SHORT_BUDGETS, chain_for
from tests.support.databases import DatabaseUnderTest, postgres_database
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import NextcordBot, OpenNextcord
from tests.support.paths import REPO
from tests.support.postgres import PostgresServer
from tests.support.registries import OpenRegistry, registries
from tests.support.scripts import answer
from tests.support.turns import HeldTurns, TurnBody, streaming
from tests.support.waiting import until
from tomori.delivery import budget
from tomori.delivery.notices import GENERATION_ERROR
from tomori.locks import Admission, ChannelLocks, Trigger, Turn, TurnGuard
from tomori.store import postgres as postgres_store
from tomori.store import retry

pytestmark = pytest.mark.slow  # a real server stopped, frozen and cut off

OpenBot = Callable[..., Awaitable[NextcordBot]]
CHANNEL = "100"


@pytest.fixture
async def pg_database(pg_url: str) -> Any:
    database = postgres_database(pg_url)
    yield database
    await database.close()


@pytest.fixture
def open_bot(
    pg_database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> OpenBot:
    async def start(**overrides: object) -> NextcordBot:
        settings = pg_database.settings(**{**SHORT_BUDGETS, **overrides})
        return await open_nextcord(settings, chain_for(llm_server))

    return start


ANSWERS = [f"Answer number {n}." for n in range(1, 5)]


async def assert_all_answered_once_and_usable(
    nc: NextcordBot, llm_server: LLMServer, database: DatabaseUnderTest
) -> None:
    async with asyncio.timeout(30):
        await nc.settled()
    assert nc.discord.contents() == ANSWERS  # in order, each once
    assert len(llm_server.requests) == len(ANSWERS)  # no model asked twice for one message
    llm_server.script(answer("Still here."))
    nc.say(f"{nc.mention()} are you there?")
    async with asyncio.timeout(30):
        await nc.settled()
    assert nc.discord.contents() == [*ANSWERS, "Still here."]
    assert await database.rows("SELECT * FROM channel_locks") == []
    assert await database.rows("SELECT * FROM queued_triggers") == []


async def test_a_server_restart_under_traffic_loses_and_repeats_nothing(
    open_bot: OpenBot,
    llm_server: LLMServer,
    pg_server: PostgresServer,
    pg_database: DatabaseUnderTest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """And the log tells the outage once per kind of failure, without a traceback, and once
    that it is over: not once per statement, held message, loop or reconnection attempt."""
    caplog.set_level(logging.INFO)
    nc = await open_bot(channel_lock_timeout_ms=2_000)
    llm_server.script(answer(ANSWERS[0], pieces=10, gap=0.1), *map(answer, ANSWERS[1:]))
    nc.say(f"{nc.mention()} one")
    await until(lambda: len(llm_server.requests) == 1)

    await pg_server.stop()
    for word in ("two", "three", "four"):  # held while the server is away
        nc.say(f"{nc.mention()} {word}")
    await until(lambda: nc.discord.contents() == ANSWERS[:1])  # finished without the database
    await asyncio.sleep(4)  # longer than the lock's stale window and its owner's dead window
    assert len(llm_server.requests) == 1
    await pg_server.start()

    await assert_all_answered_once_and_usable(nc, llm_server, pg_database)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    outage = [r.getMessage() for r in warnings if "is out of reach" in r.getMessage()]
    assert outage, "the outage was not told"
    kinds = [re.findall(r"out of reach \((\w+)", message)[0] for message in outage]
    assert len(kinds) == len(set(kinds)), outage  # each kind once
    assert [r for r in warnings if "is back after" in r.getMessage()][1:] == []
    assert any("is back after" in r.getMessage() for r in warnings)
    told_again = [
        f"{r.name}: {r.getMessage()}"
        for r in warnings
        if r.name.startswith(("tomori", "asyncpg"))
        and ("is out of reach" not in r.getMessage() or r.exc_info)
        and "is back after" not in r.getMessage()
    ]
    assert told_again == []


async def test_connections_cut_under_traffic_lose_and_repeat_nothing(
    open_bot: OpenBot,
    llm_server: LLMServer,
    pg_server: PostgresServer,
    pg_database: DatabaseUnderTest,
) -> None:
    """Cut mid-transaction, a commit may or may not have landed: retries must not repeat it."""
    nc = await open_bot(channel_lock_timeout_ms=2_000)
    llm_server.script(*(answer(text, pieces=6, gap=0.05) for text in ANSWERS))
    nc.say(f"{nc.mention()} one")
    await until(lambda: len(llm_server.requests) == 1)
    for word in ("two", "three", "four"):
        nc.say(f"{nc.mention()} {word}")
        await asyncio.sleep(0)  # its admission is under way
        await pg_server.terminate_connections()
    async with asyncio.timeout(30):
        while len(llm_server.requests) < len(ANSWERS):  # cut the hand-offs too
            await pg_server.terminate_connections()
            await asyncio.sleep(0.05)

    await assert_all_answered_once_and_usable(nc, llm_server, pg_database)


async def test_a_connection_cut_while_a_turn_reads_its_settings_is_waited_out_and_answered(
    open_bot: OpenBot, llm_server: LLMServer, pg_server: PostgresServer, pg_url: str
) -> None:
    """Admitted, a message's turn reads its channel's settings and tool switches before it asks
    a model: a cut there (a failover, a blip) is read again, not a failed turn. What made the
    test above fail now and then on a loaded machine, made certain."""
    nc = await open_bot()
    llm_server.script(*map(answer, ANSWERS[:3]))
    nc.say(f"{nc.mention()} one")  # the reply rule's and limits' reads are cached from here
    async with asyncio.timeout(30):
        await nc.settled()
    name = pg_url.rsplit("/", 1)[1]
    for word, table in (("two", "channel_settings"), ("three", "tool_switches")):
        async with pg_server.reads_held(name, table) as cut_reader:
            nc.say(f"{nc.mention()} {word}")
            await cut_reader()
        async with asyncio.timeout(30):
            await nc.settled()
    assert nc.discord.embeds() == []
    assert nc.discord.contents() == ANSWERS[:3]
    assert len(llm_server.requests) == 3


async def test_messages_past_the_bound_held_in_memory_get_the_error_notice(
    open_bot: OpenBot,
    llm_server: LLMServer,
    pg_server: PostgresServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Messages held for the database are kept in memory, so there is a most: past it a
    message is not held but told at once that it failed, and the held ones are answered."""
    monkeypatch.setattr(retry, "MAX_HELD", 2)
    nc = await open_bot()
    llm_server.script(*map(answer, ANSWERS[:3]))
    await pg_server.stop()
    for word in ("one", "two", "three"):
        nc.say(f"{nc.mention()} {word}")
    await until(lambda: nc.discord.embeds() == [GENERATION_ERROR.title])  # the third, at once
    await pg_server.start()
    async with asyncio.timeout(30):
        await nc.settled()
    assert nc.discord.contents() == ANSWERS[:2]
    assert len(llm_server.requests) == 2


# -- /kill from another process, announced ---------------------------------------------------


@pytest.fixture
async def open_registry(pg_database: DatabaseUnderTest) -> AsyncIterator[OpenRegistry]:
    """Opens registries on the test's PostgreSQL database, each with a pool of its own, as
    separate processes would."""
    async with registries(pg_database) as factory:
        yield factory


class KilledTurns:
    """Turns that run until /kill stops them, noting when each kill reached them."""

    def __init__(self) -> None:
        self.killed_at: list[float] = []

    async def __call__(self, turn: Turn, guard: TurnGuard) -> None:
        stopped = asyncio.Event()

        def kill(reason: object) -> None:
            self.killed_at.append(time.monotonic())
            stopped.set()

        guard.set_kill(kill)
        await stopped.wait()


async def kill_delays(
    owner: ChannelLocks, turns: KilledTurns, other: ChannelLocks, count: int, round: str
) -> list[float]:
    """Seconds from a /kill in `other` to the kill callback of the turn running in `owner`."""
    delays = []
    for n in range(count):
        turns.killed_at.clear()
        assert await owner.submit(Trigger(CHANNEL, f"{round}-{n}")) is Admission.STARTED
        await asyncio.sleep(0.05)  # the turn set its callback, the owner waits for requests
        asked = time.monotonic()
        assert (await other.kill(CHANNEL, requester_id="42")).stopped
        await until(lambda: bool(turns.killed_at), within=10)
        delays.append(turns.killed_at[0] - asked)
        await owner.wait_idle(CHANNEL)
    return delays


async def test_a_kill_from_another_process_is_heard_at_once_even_after_connections_drop(
    open_registry: OpenRegistry, pg_server: PostgresServer
) -> None:
    """Polled, a /kill would wait for the owner's next read; announced, it arrives well before
    (the owner reads at once when PostgreSQL tells it). After every connection is cut the
    owner listens again, at once, not after its next safety read."""
    turns = KilledTurns()
    owner = await open_registry(turns)
    other = await open_registry(HeldTurns())
    assert statistics.median(await kill_delays(owner, turns, other, 5, "before")) < 0.15

    assert await pg_server.terminate_connections() > 0
    await asyncio.sleep(0.3)
    delays = await kill_delays(owner, turns, other, 5, "after")
    assert max(delays) < 1.0  # the safety read would come after 5 s
    assert statistics.median(delays) < 0.15


# -- liveness across a restart ---------------------------------------------------------------


@dataclass
class OwnerAndOther:
    """Two processes on one channel, with a 2 s stale window: the owner runs a turn of
    `body` in it (streaming unless told), the other would take the channel if it judged wrong."""

    owner: ChannelLocks
    owner_turns: HeldTurns
    other: ChannelLocks
    other_turns: HeldTurns

    @classmethod
    async def open(cls, open_registry: OpenRegistry, body: TurnBody = streaming) -> OwnerAndOther:
        owner_turns, other_turns = HeldTurns(body), HeldTurns()
        owner = await open_registry(owner_turns, channel_lock_timeout_ms=2_000)
        other = await open_registry(other_turns, channel_lock_timeout_ms=2_000)
        assert await owner.submit(Trigger(CHANNEL, "m1")) is Admission.STARTED
        await owner_turns.next_started()
        return cls(owner, owner_turns, other, other_turns)

    async def assert_the_owner_keeps_the_channel(self, again_after_s: float = 0) -> None:
        """A message in the other process is queued behind the owner's turn, and, if asked,
        once more after `again_after_s` (the owner wrote again meanwhile); nothing was taken."""
        assert await self.other.submit(Trigger(CHANNEL, "m2")) is Admission.QUEUED
        if again_after_s:
            await asyncio.sleep(again_after_s)
            assert await self.other.submit(Trigger(CHANNEL, "m3")) is Admission.QUEUED
        assert self.owner_turns.cancelled == []
        assert self.other_turns.started == []


async def test_a_process_that_outlived_a_server_restart_keeps_its_channel(
    open_registry: OpenRegistry, pg_server: PostgresServer
) -> None:
    """While the server is down nobody can write a heartbeat or progress: after a restart
    longer than the dead and stale windows, another process must not take the channel of a
    turn that streamed on all along, neither at once nor once the owner writes again."""
    both = await OwnerAndOther.open(open_registry)
    await asyncio.sleep(1.5)  # its progress is in the row

    await pg_server.stop()
    await asyncio.sleep(4)  # longer than its dead window (3 s) and stale window (2 s)
    await pg_server.start()
    await both.assert_the_owner_keeps_the_channel(again_after_s=4)


async def test_processes_cut_off_from_a_server_that_stayed_up_keep_their_channels(
    open_registry: OpenRegistry, pg_server: PostgresServer, pg_url: str
) -> None:
    """The network between every process and the server goes away for longer than the dead
    and stale windows, and comes back; the server never restarted. The first process back
    must not take the channel of one that streamed on, since it was cut off as long itself."""
    both = await OwnerAndOther.open(open_registry)
    await asyncio.sleep(1.5)  # its progress is in the row

    name = pg_url.rsplit("/", 1)[1]
    await pg_server.cut_off(name)
    try:
        await asyncio.sleep(4)  # longer than its dead window (3 s) and stale window (2 s)
    finally:
        await pg_server.cut_off(name, cut=False)
    await both.assert_the_owner_keeps_the_channel(again_after_s=4)


async def test_progress_that_could_not_be_written_is_written_once_the_server_is_back(
    open_registry: OpenRegistry, pg_server: PostgresServer
) -> None:
    """A turn that began waiting under a watchdog while the server was down (a tool call, say)
    is exempt from stale expiry: the row must say so once the server is back, even though the
    turn makes no progress to write again."""
    server_down = asyncio.Event()

    async def tool_call_during_the_outage(turn: Turn, guard: TurnGuard) -> None:
        await server_down.wait()
        await guard.run_under_watchdog(asyncio.Event().wait())

    both = await OwnerAndOther.open(open_registry, tool_call_during_the_outage)

    await pg_server.stop()
    server_down.set()
    await asyncio.sleep(1.5)  # its write failed
    await pg_server.start()
    await asyncio.sleep(3)  # longer than the stale window, counted from the restart
    await both.assert_the_owner_keeps_the_channel()


# -- a server gone silent --------------------------------------------------------------------


async def test_a_server_gone_silent_fails_new_messages_in_time_instead_of_hanging(
    open_bot: OpenBot,
    llm_server: LLMServer,
    pg_server: PostgresServer,
    pg_database: DatabaseUnderTest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A host that stops answering (no refusal, no reset: a frozen server, a dead route) must
    not hold the bot forever: the answer streaming finishes, a message sent meanwhile gets the
    error notice once it could no longer be answered in time, and once the server answers
    again the channel works. The statement timeout is shortened from its 15 s: what is under
    test is that a silent server is given up on, not after how long."""
    monkeypatch.setattr(postgres_store, "COMMAND_TIMEOUT_S", 4.0)
    nc = await open_bot(channel_lock_timeout_ms=2_000, queue_max_age_ms=3_000)
    llm_server.script(answer(ANSWERS[0], pieces=10, gap=0.1), answer("After the silence."))
    nc.say(f"{nc.mention()} one")
    await until(lambda: len(llm_server.requests) == 1)
    pg_server.freeze()
    try:
        nc.say(f"{nc.mention()} two")
        await until(lambda: nc.discord.contents() == ANSWERS[:1])
        await until(lambda: nc.discord.embeds() == [GENERATION_ERROR.title], within=60)
    finally:
        pg_server.thaw()
    nc.say(f"{nc.mention()} three")
    async with asyncio.timeout(60):
        await nc.settled()
    assert nc.discord.contents() == [ANSWERS[0], "After the silence."]
    assert len(llm_server.requests) == 2
    assert await pg_database.rows("SELECT * FROM channel_locks") == []


# -- clocks that disagree --------------------------------------------------------------------

SKEWED_REGISTRY = textwrap.dedent(
    """
    import sys
    import time

    SKEW_S = float(sys.argv[1])
    _true_time = time.time
    time.time = lambda: _true_time() + SKEW_S  # this host's clock is off, before tomori reads it

    import asyncio

    from tomori.config.settings import Settings
    from tomori.locks import ChannelLocks, Trigger
    from tomori.locks import lock_backend
    from tomori.store.connect import open_database

    async def streaming(turn, guard):
        while True:
            guard.touch()
            await asyncio.sleep(0.05)

    async def main() -> None:
        settings = Settings.from_env()
        database = await open_database(settings)
        locks = ChannelLocks(lock_backend(database, settings), settings, streaming)
        await locks.start()
        while line := await asyncio.to_thread(sys.stdin.readline):
            channel_id, message_id = line.split()
            print(await locks.submit(Trigger(channel_id, message_id)), flush=True)
        await locks.close()
        await database.close()

    asyncio.run(main())
    """
)


class SkewedRegistry:
    """A registry in a process of its own whose wall clock is `skew_s` off the true one."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process

    @classmethod
    async def start(cls, database: DatabaseUnderTest, skew_s: float, **env: str) -> SkewedRegistry:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            SKEWED_REGISTRY,
            str(skew_s),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, **database.environment, **env, "PYTHONPATH": str(REPO)},
        )
        return cls(process)

    async def submit(self, channel_id: str, message_id: str) -> str:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write(f"{channel_id} {message_id}\n".encode())
        await self._process.stdin.drain()
        return (await asyncio.wait_for(self._process.stdout.readline(), 30)).decode().strip()

    async def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), 30)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()


@pytest.mark.parametrize("skew_s", [60.0, -60.0])
async def test_hosts_whose_clocks_differ_by_a_minute_neither_steal_nor_keep_a_lock(
    open_registry: OpenRegistry, pg_database: DatabaseUnderTest, skew_s: float
) -> None:
    """Staleness and liveness are judged on the server's clock: a process whose clock is a
    minute ahead (or behind) holds its channel like any other, and does not take another's."""

    here_turns = HeldTurns(streaming)
    here = await open_registry(here_turns, channel_lock_timeout_ms=2_000)
    there = await SkewedRegistry.start(pg_database, skew_s, CHANNEL_LOCK_TIMEOUT_MS="2000")
    try:
        assert await there.submit("1", "there-1") == "started"
        assert await here.submit(Trigger("2", "here-1")) is Admission.STARTED
        assert await here.submit(Trigger("1", "here-2")) is Admission.QUEUED
        assert await there.submit("2", "there-2") == "queued"
        await asyncio.sleep(3)  # past the stale and dead windows: both still stream, and say so
        assert await here.submit(Trigger("1", "here-3")) is Admission.QUEUED
        assert await there.submit("2", "there-3") == "queued"
        assert here_turns.cancelled == []
        ((now,),) = await pg_database.rows("SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8")
        for (written_at,) in await pg_database.rows(
            "SELECT last_progress_at FROM channel_locks UNION ALL"
            " SELECT heartbeat_at FROM instances UNION ALL SELECT received_at FROM queued_triggers"
        ):
            assert abs(written_at - now) < 10  # on the server's clock, not the skewed one's
    finally:
        await there.close()


async def test_closing_does_not_wait_on_a_server_that_stopped_answering(
    open_registry: OpenRegistry, pg_server: PostgresServer
) -> None:
    turns = HeldTurns()
    locks = await open_registry(turns)
    assert await locks.submit(Trigger(CHANNEL, "m1")) is Admission.STARTED
    await turns.next_started()
    pg_server.freeze()
    try:
        async with asyncio.timeout(60):  # bounded by the statement timeouts; it hung before
            await locks.close()
        assert turns.cancelled == ["m1"]  # the running answer is stopped, not left streaming
    finally:
        pg_server.thaw()


async def test_a_kill_in_a_process_without_the_turn_works_while_the_server_is_down(
    open_registry: OpenRegistry, pg_server: PostgresServer
) -> None:
    other = await open_registry(HeldTurns())
    await pg_server.stop()
    try:
        assert await other.requester_of(CHANNEL) is None  # not an error: /kill goes on
    finally:
        await pg_server.start()


async def test_an_outage_is_told_once_not_at_every_count_of_the_processes_or_scrape(
    open_bot: OpenBot,
    pg_server: PostgresServer,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While PostgreSQL is away, the request budget's count of the bot's processes (every
    second) and each scrape's read of the queues fail again and again: the log says each at
    most once, beside the outage's own warning, instead of a line a second and a scrape."""
    monkeypatch.setattr(budget, "SHARE_REFRESH_S", 0.05)
    caplog.set_level(logging.INFO)
    nc = await open_bot(metrics_addr="127.0.0.1:0")
    await nc.chat.exporter.scrape()
    await pg_server.stop()
    try:
        await until(lambda: any("is out of reach" in r.getMessage() for r in caplog.records))
        for _ in range(3):
            await nc.chat.exporter.scrape()
        await asyncio.sleep(20 * budget.SHARE_REFRESH_S)  # twenty counts more, all failing
    finally:
        await pg_server.start()
    said = [r.getMessage() for r in caplog.records]
    assert len([m for m in said if m.startswith("could not count the bot's processes")]) <= 1
    assert len([m for m in said if m.startswith("could not read turns_queued")]) <= 1
