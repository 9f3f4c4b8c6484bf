"""A soak: mixed traffic in three channels with random stalls, errors and kills, through the
whole cog. Afterwards nothing may be left: no task, lock row, queued trigger, provider
connection or file handle. `TOMORI_SOAK_SECONDS` sets the length (15 s here; the bench
script runs it for 10 minutes)."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import CHANNEL_IDS, start_nextcord_bot, stop_nextcord_bot
from tests.support.pace import quicken_channel_pace
from tests.support.scripts import answer, http_error, silent, stalled_after
from tomori.delivery.budget import CHANNEL_WINDOW_S, CHANNEL_WRITES

pytestmark = pytest.mark.slow  # seconds of mixed traffic through the whole cog

SOAK_SECONDS = float(os.environ.get("TOMORI_SOAK_SECONDS", "15"))
WINDOW_S = CHANNEL_WINDOW_S / 5
"""Each channel's bucket, five times quicker than Discord's: the soak's subject is what mixed
traffic leaves behind, not the pace (tests/cog/test_discord_limits.py holds that). At Discord's
window the answers and notices of 15 s of traffic took 48 s more to drain; kept full, the
quicker buckets still make writes wait, five times as often."""


def open_files() -> set[str]:
    """What this process has open: files, sockets and pipes, by what they point at."""
    targets = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.add(f"{fd}:{os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:
            continue  # the descriptor listdir itself used
    return targets


async def test_mixed_traffic_with_stalls_and_kills_leaves_nothing_behind(
    tmp_path: Path,
    llm_server: LLMServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    files_before = open_files()
    tasks_before = asyncio.all_tasks()
    settings = settings_for(
        tmp_path,
        stream_first_token_timeout_ms=250,
        stream_sdk_call_timeout_ms=150,
        stream_abandoned_settle_timeout_ms=50,
    )
    quicken_channel_pace(WINDOW_S, monkeypatch)
    nc = await start_nextcord_bot(settings, chain_for(llm_server), monkeypatch)
    rng = random.Random(2026)
    asked = kills = 0
    deadline = time.monotonic() + SOAK_SECONDS
    with caplog.at_level(logging.ERROR):
        while time.monotonic() < deadline:
            roll = rng.random()
            if roll < 0.55:
                llm_server.script(
                    answer(
                        f"Answer {asked}.\n\nMore.",
                        pieces=rng.randint(1, 8),
                        gap=rng.uniform(0, 0.02),
                    )
                )
            elif roll < 0.75:
                llm_server.script(stalled_after(f"Stalling {asked}.\n\n"))
            elif roll < 0.9:
                llm_server.script(silent())
            else:
                llm_server.script(http_error(rng.choice([429, 500, 503])))
            nc.say(f"{nc.mention()} question {asked}", channel=rng.choice(CHANNEL_IDS))
            asked += 1
            if rng.random() < 0.15:
                nc.bot._connection.parse_interaction_create(
                    nc.kill_payload(channel=rng.choice(CHANNEL_IDS))
                )
                kills += 1
            await asyncio.sleep(rng.uniform(0.005, 0.12))
        await nc.settled()
        await stop_nextcord_bot(nc)
    await asyncio.sleep(0.2)  # the server's side of closed connections winds down

    assert asked > SOAK_SECONDS * 5
    assert kills > SOAK_SECONDS
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    # Discord takes CHANNEL_WRITES per CHANNEL_WINDOW_S in a channel, and the cog keeps to it:
    # far fewer than one write per question, but the channels' buckets were kept busy
    bucket_bound = len(CHANNEL_IDS) * CHANNEL_WRITES * SOAK_SECONDS / WINDOW_S
    assert len(nc.discord.sent) > 0.6 * bucket_bound
    left = [t for t in asyncio.all_tasks() - tasks_before if not t.done()]
    assert left == []
    assert all(connection.closed.is_set() for connection in llm_server.connections)
    with closing(sqlite3.connect(settings.db_path)) as db:
        assert db.execute("SELECT count(*) FROM channel_locks").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM queued_triggers").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM instances").fetchone() == (0,)
    assert open_files() - files_before == set()
