"""Whole bot processes on one database, on SQLite and on PostgreSQL: a SIGKILL mid-stream, two
processes at once, a rolling restart under a flood, and /kill sent to the other process."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from tests.support.command import environment
from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer, Reply, SeenRequest
from tests.support.nextcord_fake import (
    ALICE,
    BOT_ID,
    CHANNEL_ID,
    CHANNEL_IDS,
    message_payload,
    snowflake,
    user_payload,
)
from tests.support.paths import REPO
from tests.support.scripts import answer, silent, stalled_after
from tomori.delivery.notices import KILL_STOPPED
from tomori.locks.postgres import SAFETY_READ_S
from tomori.policy.proxies import KNOWN_PROXIES

pytestmark = pytest.mark.slow  # whole bot processes

QUICK = {
    "STREAM_ABANDONED_SETTLE_TIMEOUT_MS": "50",
    "TOMORI_FOLLOW_UPS": "0",
    "TOMORI_QUEUE_PER_MEMBER": "1000",
}
"""Quick settles; and each message its own turn, all queued (one user floods the channel here,
which follow-ups would fold into fewer answers and a member's share of the queue would cut)."""
_seed_files = count()
PLURALKIT = next(iter(KNOWN_PROXIES))


class BotProcess:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.sent: list[dict[str, Any]] = []
        self._events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(
        cls,
        database: DatabaseUnderTest,
        server: LLMServer,
        folder: Path,
        known: list[dict[str, Any]] | None = None,
        settings: dict[str, str] | None = None,
    ) -> BotProcess:
        """A bot process on `database` (and `settings`, as variables), once it is serving."""
        seeds = folder / f"seeds-{next(_seed_files)}.json"
        await asyncio.to_thread(seeds.write_text, json.dumps(known or []))
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.support.bot_process",
            server.base_url,
            str(seeds),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=environment(
                **{**database.environment, **QUICK, **(settings or {})}, PYTHONPATH=str(REPO)
            ),
            cwd=REPO,
        )
        bot = cls(process)
        assert await bot.next_event() == {"ready": True}
        return bot

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            event = json.loads(line)
            if "sent" in event:
                event["seen_at"] = time.monotonic()
                self.sent.append(event)
            await self._events.put(event)

    async def next_event(self, within: float = 30) -> dict[str, Any]:
        return await asyncio.wait_for(self._events.get(), within)

    def send(self, **command: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(command) + "\n").encode())

    async def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()
        await self._reader

    async def stop(self) -> None:
        """SIGTERM, as a deploy stops a bot, and wait for it to exit."""
        if self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()
        await self._reader


@pytest.fixture
async def processes() -> AsyncIterator[list[BotProcess]]:
    started: list[BotProcess] = []
    yield started
    for bot in started:
        await bot.stop()


def question(text: str, channel: int = CHANNEL_ID) -> dict[str, Any]:
    payload = message_payload(
        channel,
        user_payload(ALICE, "alice"),
        f"<@{BOT_ID}> {text}",
        mentions=[user_payload(BOT_ID, "Tomori", bot=True)],
    )
    payload["member"] = {
        "roles": [],
        "joined_at": "2024-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
    }
    return payload


async def test_a_bot_killed_mid_stream_serves_the_channel_again_and_replays_its_queue(
    database: DatabaseUnderTest,
    tmp_path: Path,
    llm_server: LLMServer,
    processes: list[BotProcess],
) -> None:
    llm_server.script(
        stalled_after("Working on the first...\n\n"), answer("Answer two."), answer("Answer three.")
    )
    first = await BotProcess.start(database, llm_server, tmp_path)
    processes.append(first)
    questions = [question(f"question {n}") for n in (1, 2, 3)]
    first.send(say=questions[0])
    assert (await first.next_event())["sent"] == "Working on the first..."
    first.send(say=questions[1])
    first.send(say=questions[2])
    async with asyncio.timeout(10):  # both are queued in the database behind the stalled turn
        while len(await database.rows("SELECT id FROM queued_triggers")) < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    await first.kill()

    # Discord still has the messages; the restarted process reads them to replay the queue.
    second = await BotProcess.start(database, llm_server, tmp_path, known=questions)
    processes.append(second)
    replies = [await second.next_event(), await second.next_event()]
    assert [(r["sent"], r["reply_to"]) for r in replies] == [
        ("Answer two.", int(questions[1]["id"])),
        ("Answer three.", int(questions[2]["id"])),
    ]
    await asyncio.sleep(0.3)
    assert len(llm_server.requests) == 3  # nothing was answered twice
    assert second.sent == replies


async def test_two_processes_on_one_database_answer_a_flood_one_turn_at_a_time(
    database: DatabaseUnderTest,
    tmp_path: Path,
    llm_server: LLMServer,
    processes: list[BotProcess],
) -> None:
    """Twelve answers in one channel would wait out its Discord bucket twice (10 s) at the
    real pace; the pace is not what this checks, so the bots keep a 0.5 s window."""
    flood = [question(f"flood {n}") for n in range(12)]
    llm_server.script(*[answer(f"Reply {n}.", gap=0.01) for n in range(12)])
    quick_pace = {"TESTS_CHANNEL_WINDOW_S": "0.5"}
    bots = [
        await BotProcess.start(database, llm_server, tmp_path, settings=quick_pace)
        for _ in range(2)
    ]
    processes.extend(bots)
    for payload in flood:
        for bot in bots:
            bot.send(seed=payload)
    for n, payload in enumerate(flood):
        bots[n % 2].send(say=payload)
    async with asyncio.timeout(60):
        while sum(len(bot.sent) for bot in bots) < len(flood):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    answered = sorted(event["reply_to"] or 0 for bot in bots for event in bot.sent)
    assert len(answered) == len(flood)  # every question once, none twice
    assert len(llm_server.requests) == len(flood)
    assert llm_server.most_in_flight == 1  # never two turns in the channel at once


BEATING = {"CHANNEL_LOCK_TIMEOUT_MS": "3000"}
"""Instances beat every second: a queue a stopped process left is served within one."""


async def test_a_turn_a_stop_cut_before_it_showed_anything_is_answered_by_the_process_left(
    database: DatabaseUnderTest,
    tmp_path: Path,
    llm_server: LLMServer,
    processes: list[BotProcess],
) -> None:
    llm_server.script(silent(), answer("Answered after the restart."))
    stopped, left = [
        await BotProcess.start(database, llm_server, tmp_path, settings=BEATING) for _ in range(2)
    ]
    processes.extend((stopped, left))
    asked = question("a slow one")
    left.send(seed=asked)
    stopped.send(say=asked)
    await asyncio.wait_for(llm_server.request_arrived.wait(), 10)
    await stopped.stop()  # the deploy's SIGTERM, while the model has said nothing yet

    reply = await left.next_event()
    assert (reply["sent"], reply["reply_to"]) == ("Answered after the restart.", int(asked["id"]))
    assert stopped.sent == []
    assert await database.rows("SELECT message_id FROM queued_triggers") == []


async def test_a_turn_a_crash_cut_before_it_showed_anything_is_answered_by_the_process_left(
    database: DatabaseUnderTest,
    tmp_path: Path,
    llm_server: LLMServer,
    processes: list[BotProcess],
) -> None:
    """A process killed (or whose stop was cut short) before its turn showed anything leaves a
    lock the survivor takes over: the message goes back to its queue and is answered."""
    llm_server.script(silent(), answer("Answered after the crash."))
    crashed, left = [
        await BotProcess.start(database, llm_server, tmp_path, settings=BEATING) for _ in range(2)
    ]
    processes.extend((crashed, left))
    asked = question("a slow one")
    left.send(seed=asked)
    crashed.send(say=asked)
    await asyncio.wait_for(llm_server.request_arrived.wait(), 10)
    await crashed.kill()  # SIGKILL: no hand-off at all, while the model has said nothing yet

    reply = await left.next_event()
    assert (reply["sent"], reply["reply_to"]) == ("Answered after the crash.", int(asked["id"]))
    assert crashed.sent == []
    assert await database.rows("SELECT message_id FROM queued_triggers") == []


async def test_a_respond_a_crash_cut_before_it_showed_anything_is_answered_by_the_process_left(
    database: DatabaseUnderTest,
    tmp_path: Path,
    llm_server: LLMServer,
    processes: list[BotProcess],
) -> None:
    """A command's turn has no message to read back, but its payload holds all it asks: cut
    by a crash before it showed anything, it is run again by the survivor, as a message is."""
    llm_server.script(silent(), answer("Answered after the crash."))
    crashed, left = [
        await BotProcess.start(database, llm_server, tmp_path, settings=BEATING) for _ in range(2)
    ]
    processes.extend((crashed, left))
    crashed.send(respond=CHANNEL_ID, prompt="tell the story of the lighthouse")
    assert (await crashed.next_event())["respond_reply"] == "Answering"
    await asyncio.wait_for(llm_server.request_arrived.wait(), 10)
    await crashed.kill()  # SIGKILL while the model has said nothing yet

    reply = await left.next_event()
    assert (reply["sent"], reply["reply_to"]) == ("Answered after the crash.", None)
    assert "the lighthouse" in str(llm_server.requests[-1].body["messages"])
    assert len(llm_server.requests) == 2
    assert await database.rows("SELECT channel_id FROM queued_triggers") == []


async def test_a_turn_a_stop_cut_after_its_first_words_is_not_answered_again(
    database: DatabaseUnderTest,
    tmp_path: Path,
    llm_server: LLMServer,
    processes: list[BotProcess],
) -> None:
    llm_server.script(stalled_after("Working on it...\n\n"), answer("The next answer."))
    stopped, left = [
        await BotProcess.start(database, llm_server, tmp_path, settings=BEATING) for _ in range(2)
    ]
    processes.extend((stopped, left))
    asked = question("a long one")
    left.send(seed=asked)
    stopped.send(say=asked)
    assert (await stopped.next_event())["sent"] == "Working on it..."
    await stopped.stop()

    left.send(say=question("next"))  # a message replayed first would be answered first
    reply = await left.next_event()
    assert (reply["sent"], reply["reply_to"]) == ("The next answer.", None)
    assert "next" in str(llm_server.requests[1].body["messages"][-1])
    assert len(llm_server.requests) == 2


def echo(request: SeenRequest) -> Reply:
    """The model answers the last question of the turn, naming it, taking a moment to stream.

    Questions asked one after another before an answer reach the model as one user turn, one
    line each; the model answers the newest."""
    asked = request.body["messages"][-1]["content"]
    if isinstance(asked, list):
        asked = " ".join(part.get("text", "") for part in asked)
    return answer(f"Answer to {asked.splitlines()[-1]}.", pieces=4, gap=0.1)


@pytest.fixture
async def echo_server() -> AsyncIterator[LLMServer]:
    server = LLMServer(default=echo)
    await server.start()
    yield server
    await server.close()


def answered(bots: list[BotProcess]) -> list[dict[str, Any]]:
    """Every answer either process posted, in the order they were posted."""
    return sorted((event for bot in bots for event in bot.sent), key=lambda e: e["seen_at"])


def flood_number(content: str) -> int:
    found = re.search(r"flood (\d+)", content)
    assert found is not None, content
    return int(found.group(1))


async def test_a_rolling_restart_under_a_flood_answers_every_message_once_in_order(
    database: DatabaseUnderTest, tmp_path: Path, echo_server: LLMServer
) -> None:
    """On a loaded machine: a process spins on a core throughout, as another service on the
    machine would: a stop's hand-offs then took longer than bot.py let the cog close, and the
    turns they cut lost their messages (three in a row, one per channel), or, once replayed, were
    answered twice when a cancel cut a release already under way. (An idle machine's run is the
    same test with less in the way: the loaded one covers it.)"""
    burner = await asyncio.create_subprocess_exec(sys.executable, "-c", "while True: pass")
    try:
        await _rolling_restart(database, tmp_path, echo_server)
    finally:
        burner.kill()
        await burner.wait()


async def _rolling_restart(
    database: DatabaseUnderTest, tmp_path: Path, echo_server: LLMServer
) -> None:
    flood = [question(f"flood {n}", CHANNEL_IDS[n % 3]) for n in range(30)]
    settings = BEATING
    old = await BotProcess.start(database, echo_server, tmp_path, settings=settings)
    bots = [old]
    receiving = [old]
    new: BotProcess | None = None
    starting: asyncio.Task[BotProcess] | None = None
    stopping: asyncio.Task[None] | None = None
    overlap = 0
    try:
        for n, payload in enumerate(flood):
            for bot in receiving:
                bot.send(say=payload)
            if n == 3:  # the deploy starts the new process while the old one serves
                starting = asyncio.create_task(
                    BotProcess.start(database, echo_server, tmp_path, flood[: n + 1], settings)
                )
            if n == 12 and starting is not None and new is None:
                await asyncio.wait({starting})  # a slow start: the flood waits, still queued
            if starting is not None and starting.done() and new is None:
                new = starting.result()
                bots.append(new)
                for earlier in flood[4 : n + 1]:  # what Discord took while it was starting
                    new.send(seed=earlier)
                receiving = [old, new]  # Discord now delivers each message to both
            if new is not None and (overlap := overlap + 1) == 6:
                stopping = asyncio.create_task(old.stop())  # then the deploy stops the old one
                receiving = [new]
            await asyncio.sleep(0.1)
        assert stopping is not None, "the new process took the whole flood to start"
        await stopping
        waiting_until = time.monotonic() + 20  # then the assertions below say what is missing
        while len(answered(bots)) < len(flood) and time.monotonic() < waiting_until:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # and nothing more comes
    finally:
        if starting is not None and new is None:
            bots.append(await starting)
        for bot in bots:
            await bot.stop()

    posted = answered(bots)
    numbers = [flood_number(event["sent"]) for event in posted]
    assert Counter(numbers) == Counter(range(len(flood)))  # every message once, none twice
    for event, number in zip(posted, numbers, strict=True):
        assert event["channel"] == CHANNEL_IDS[number % 3]
        assert event["reply_to"] in (None, int(flood[number]["id"]))
    for channel in range(3):
        in_channel = [n for n in numbers if n % 3 == channel]
        assert in_channel == sorted(in_channel)  # in each channel, in message order
    assert await database.rows("SELECT channel_id FROM channel_locks") == []
    assert await database.rows("SELECT message_id FROM queued_triggers") == []


async def test_a_kill_sent_to_the_other_process_stops_the_turn_and_frees_the_channel(
    database: DatabaseUnderTest,
    tmp_path: Path,
    llm_server: LLMServer,
    processes: list[BotProcess],
) -> None:
    llm_server.script(stalled_after("Working on it...\n\n"), answer("Next answer."))
    owner, other = [await BotProcess.start(database, llm_server, tmp_path) for _ in range(2)]
    processes.extend((owner, other))
    owner.send(say=question("a long one"))
    assert (await owner.next_event())["sent"] == "Working on it..."

    other.send(kill=CHANNEL_ID)  # Discord delivered /kill to the process not running the turn
    assert (await other.next_event())["kill_reply"] == KILL_STOPPED.title
    connection = llm_server.connections[0]
    # SQLite's owner reads stop requests every 250 ms; PostgreSQL's hears the notice at once,
    # well before its safety read would have found the request.
    await asyncio.wait_for(connection.closed.wait(), SAFETY_READ_S / 2)
    assert connection.closed_by_client
    async with asyncio.timeout(5):
        while await database.rows("SELECT channel_id FROM channel_locks"):  # noqa: ASYNC110
            await asyncio.sleep(0.02)

    other.send(say=question("next"))
    assert (await other.next_event())["sent"] == "Next answer."
    assert [event["sent"] for event in owner.sent] == ["Working on it..."]  # and no notice


async def test_a_follow_up_sent_to_the_other_process_stops_the_answer_and_gets_one_answer(
    database: DatabaseUnderTest,
    tmp_path: Path,
    llm_server: LLMServer,
    processes: list[BotProcess],
) -> None:
    llm_server.script(stalled_after("Python 3.11 has...\n\n"), answer("In 3.12, f-strings..."))
    follows = {"TOMORI_FOLLOW_UPS": "1"}
    owner, other = [
        await BotProcess.start(database, llm_server, tmp_path, settings=follows) for _ in range(2)
    ]
    processes.extend((owner, other))
    first = question("what is new in python?")
    owner.send(say=first)
    assert (await owner.next_event())["sent"] == "Python 3.11 has..."

    follow_up = question("wait, I meant Python 3.12")
    owner.send(seed=follow_up)  # Discord holds it for both; the gateway gave it to the other
    other.send(say=follow_up)
    connection = llm_server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), SAFETY_READ_S / 2)
    assert connection.closed_by_client
    assert (await owner.next_event())["sent"] == "In 3.12, f-strings..."
    async with asyncio.timeout(5):
        while await database.rows("SELECT channel_id FROM channel_locks"):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    assert len(llm_server.requests) == 2
    asked = str(llm_server.requests[1].body)
    assert "what is new in python?" in asked
    assert "Python 3.11 has..." in asked
    assert "wait, I meant Python 3.12" in asked
    assert [event["sent"] for event in owner.sent] == [
        "Python 3.11 has...",
        "In 3.12, f-strings...",
    ]
    assert other.sent == []


async def test_a_proxied_message_queued_by_the_other_process_gets_one_answer_for_the_member(
    database: DatabaseUnderTest,
    tmp_path: Path,
    llm_server: LLMServer,
    processes: list[BotProcess],
) -> None:
    llm_server.script(answer("First answer.", pieces=4, gap=0.3), answer("Hello, Luna."))
    grace = {"TOMORI_PROXY_GRACE_MS": "1000"}
    owner, other = [
        await BotProcess.start(database, llm_server, tmp_path, settings=grace) for _ in range(2)
    ]
    processes.extend((owner, other))
    owner.send(say=question("a long one"))
    await llm_server.request_arrived.wait()  # the owner's turn holds the channel

    other.send(join=PLURALKIT)
    original = question("hi, I am Luna")
    original["content"] = "lu: " + original["content"]
    other.send(say=original)
    webhook = user_payload(snowflake(), "Luna", bot=True)
    repost = {
        **message_payload(
            CHANNEL_ID,
            webhook,
            f"<@{BOT_ID}> hi, I am Luna",
            mentions=[user_payload(BOT_ID, "Tomori", bot=True)],
        ),
        "webhook_id": webhook["id"],
        "application_id": str(PLURALKIT),
    }
    await asyncio.sleep(0.1)  # the proxy takes a moment
    owner.send(seed=repost)  # Discord holds it for both; the gateway gave it to the other
    other.send(say=repost)
    other.send(delete=original)

    async with asyncio.timeout(15):
        while len(owner.sent) + len(other.sent) < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        while await database.rows("SELECT channel_id FROM channel_locks"):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    answers = sorted(owner.sent + other.sent, key=lambda event: event["seen_at"])
    assert [(event["sent"], event["reply_to"]) for event in answers] == [
        ("First answer.", None),
        ("Hello, Luna.", int(repost["id"])),  # queued: a reply to the member's repost
    ]
    assert len(llm_server.requests) == 2
    asked = str(llm_server.requests[1].body)
    assert "Luna: @Tomori hi, I am Luna" in asked
    assert "lu: " not in asked
