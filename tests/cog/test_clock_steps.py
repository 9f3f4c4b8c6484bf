"""A step of the host's wall clock moves nothing the cog judges on SQLite: a live process stays
alive to the others, and a user's cooldown stays the length it was.

The step is the wall clock's own (`time.time`, which NTP or an admin moves); the kernel's boot
clock, which the cog's SQLite clock counts on (`tomori.store.host_clock`), never steps.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.support.bots import OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.databases import sqlite_database
from tests.support.llm_server import LLMServer, Reply, hold_until, sse
from tests.support.nextcord_fake import OpenNextcord
from tests.support.openai_wire import chunk
from tests.support.scripts import answer, finished

STEP_S = 240.0
"""Past the heartbeat window a live process is judged by (`CHANNEL_LOCK_TIMEOUT_MS`, 180 s)."""


def step_wall_clock(monkeypatch: pytest.MonkeyPatch, by_s: float) -> None:
    """The host's wall clock steps by `by_s` seconds, for every process of the host (here,
    every bot of the test)."""
    wall = time.time
    monkeypatch.setattr(time, "time", lambda: wall() + by_s)


async def test_a_wall_clock_step_forward_leaves_a_live_process_its_channel_mid_answer(
    open_nextcord: OpenNextcord,
    llm_server: LLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_for(
        tmp_path, stream_first_token_timeout_ms=30_000, stream_sdk_call_timeout_ms=30_000
    )
    first = await open_nextcord(settings, chain_for(llm_server))
    second = await open_nextcord(settings, chain_for(llm_server))
    release = asyncio.Event()
    working = "Working on it..."
    llm_server.script(
        Reply(body=[sse(chunk(f"{working}\n\n")), hold_until(release), *finished(working)]),
        answer("The second answer."),
    )
    first.say(f"{first.mention()} a long one")
    async with asyncio.timeout(10):
        while first.discord.contents() != [working]:  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    step_wall_clock(monkeypatch, STEP_S)
    asked = second.say(f"{second.mention()} next")  # the other process gets the next message
    first.discord.add(int(asked["channel_id"]), asked)  # one Discord: the first sees it too
    await second.settled()
    rows = await sqlite_database(tmp_path).rows("SELECT message_id FROM queued_triggers")
    assert rows == [(asked["id"],)]  # queued behind the answer, not answered beside it
    assert second.discord.contents() == []
    assert len(llm_server.requests) == 1

    release.set()  # the first answer ends, then its process answers the next
    async with asyncio.timeout(10):
        while len(first.discord.contents()) < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    await first.settled()
    assert first.discord.contents() == [working, "The second answer."]
    assert llm_server.most_in_flight == 1


async def test_a_wall_clock_step_back_refuses_no_one_whose_cooldown_ran_out(
    open_bot: OpenBot,
    llm_server: LLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bot = await open_bot(settings_for(tmp_path, user_cooldown_ms=60_000), chain_for(llm_server))
    llm_server.script(answer("First."), answer("A minute later."))
    await bot.say(f"{bot.mention()} one")
    await bot.settled()
    database = sqlite_database(tmp_path)
    await database.execute("UPDATE user_limits SET admitted_at = admitted_at - 61")  # a minute on

    step_wall_clock(monkeypatch, -3600.0)  # the wall clock goes back an hour
    await bot.say(f"{bot.mention()} two")
    await bot.settled()
    assert await bot.contents() == ["First.", "A minute later."]
    assert await bot.embeds() == []  # no "Slow Down"
