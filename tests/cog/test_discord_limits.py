"""What a channel shows when Discord enforces its rate limits, through the cog, on both libraries.

The bot is a real nextcord or discord.py bot whose HTTP client talks to the faithful Discord
(tests/support/discord_rest.py: 5 writes per 5 s per channel, 50 requests per second per token,
Discord's headers and 429s). Each test asserts what a user would see there, and that Discord
refused nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from pathlib import Path

import pytest

from tests.support.bots import Library
from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import DiscordRestServer
from tests.support.llm_server import LLMServer, Reply, SeenRequest
from tests.support.rest_bots import OpenRestBot, start_rest_bot
from tests.support.scripts import answer
from tests.support.world import CHANNEL_IDS

SHORT_PARAGRAPHS = "\n\n".join(f"Point {n}: a short line of the answer." for n in range(15))
"""About 600 characters in fifteen paragraphs: once ten messages, one per paragraph or two."""

LONG_ANSWER = "\n\n".join(f"Step {n}. " + "Do this, then check that. " * 18 for n in range(26))
"""Over 12,000 characters: seven full messages."""

NOTHING_REFUSED = {"global": 0, "user": 0, "shared": 0}

FIRST_OF_MANY = 4_000_000_000_000_200_000
"""The first of a test's many channels, apart from the guild's usual ones."""


async def test_a_short_answer_of_many_paragraphs_given_at_once_is_one_message(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    llm_server.script(answer(SHORT_PARAGRAPHS, pieces=15))
    bot.say(f"{bot.mention()} list them")
    async with asyncio.timeout(10):
        await bot.settled()
    assert bot.contents() == [SHORT_PARAGRAPHS]
    assert discord_rest.rate_limited == NOTHING_REFUSED


async def test_a_short_answer_streamed_paragraph_by_paragraph_is_not_a_burst_of_messages(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """Over a second and a half: the first paragraphs show within a quarter second, the rest
    gathers at the channel's steady pace (one write a second), and the last text goes as soon
    as it is in."""
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    llm_server.script(answer(SHORT_PARAGRAPHS, pieces=15, gap=0.1))
    bot.say(f"{bot.mention()} list them")
    async with asyncio.timeout(10):
        await bot.settled()
    shown = bot.contents()
    assert 2 <= len(shown) <= 3
    assert shown[0].startswith("Point 0: a short line of the answer.")
    assert "\n\n".join(shown) == SHORT_PARAGRAPHS
    assert discord_rest.rate_limited == NOTHING_REFUSED


async def test_a_12k_character_answer_arrives_whole_within_the_channels_bucket(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """Seven full messages: more than the channel's five writes in five seconds, so the last
    two wait for its window, and none is refused."""
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    llm_server.script(answer(LONG_ANSWER, pieces=60, gap=0.01))
    bot.say(f"{bot.mention()} the whole guide, please")
    async with asyncio.timeout(20):
        await bot.settled()
    shown = bot.contents()
    assert " ".join(shown).split() == LONG_ANSWER.split()
    assert len(shown) <= 8  # seven full messages, and the first shown before they filled
    assert all(len(message) <= 2_000 for message in shown)
    assert discord_rest.rate_limited == NOTHING_REFUSED


async def test_an_answer_at_the_ceiling_without_blank_lines_fills_each_message(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """A roleplay answer of lines and no paragraph ends, at a ceiling of five full messages:
    each message holds as many whole lines as fit (30 of these), not a thousand characters'
    worth (once 10 messages where 6 do)."""
    settings = settings_for(tmp_path, max_answer_chars=5 * 1950)
    bot = await open_rest_bot(settings, chain_for(llm_server))
    line = "the quick brown fox jumps over it, and over it again."
    lines = [f"Line {n:03d}: {line}" for n in range(300)]
    llm_server.script(answer("\n".join(lines), pieces=150, gap=0.005))
    bot.say(f"{bot.mention()} tell the long story")
    async with asyncio.timeout(30):
        await bot.settled()
    shown = bot.contents()
    assert shown[-1].endswith("(The answer was cut here: it was too long.)")
    assert "\n".join(shown).startswith("\n".join(lines[:100]))  # in order, no line lost
    per_message = 1950 // (len(lines[0]) + 1)
    fewest = -(-5 * 1950 // (per_message * (len(lines[0]) + 1)))
    assert len(shown) <= fewest + 1  # (the first message goes before the rest is in)
    assert all(len(message) <= 2_000 for message in shown)
    assert discord_rest.rate_limited == NOTHING_REFUSED


async def test_a_channel_is_answered_at_once_while_another_waits_for_its_own_bucket(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """One channel's long answer spends its bucket; a question in another channel is answered
    within a second, as Discord's per-channel buckets allow (nextcord alone would hold it
    behind the first channel's window)."""
    busy, quiet = CHANNEL_IDS[0], CHANNEL_IDS[1]
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    llm_server.script(answer(LONG_ANSWER, pieces=60, gap=0.01))
    bot.say(f"{bot.mention()} the whole guide, please", channel=busy)
    async with asyncio.timeout(10):
        while len(bot.contents(busy)) < 5:  # noqa: ASYNC110  (its bucket is spent)
            await asyncio.sleep(0.01)
    llm_server.script(answer("Yes, it is.", pieces=2))
    asked = time.monotonic()
    bot.say(f"{bot.mention()} is it raining?", channel=quiet)
    async with asyncio.timeout(10):
        await bot.settled(quiet)
    assert bot.contents(quiet) == ["Yes, it is."]
    assert time.monotonic() - asked < 1.0
    async with asyncio.timeout(20):
        await bot.settled()
    assert " ".join(bot.contents(busy)).split() == LONG_ANSWER.split()
    assert discord_rest.rate_limited == NOTHING_REFUSED


async def test_of_many_questions_asked_together_the_first_reaches_its_model_first(
    library: Library, discord_rest: DiscordRestServer, tmp_path: Path
) -> None:
    """Forty channels asked at once. Each turn reads and writes the database several times
    before its model is asked; were those statements served in the order they were asked, all
    forty turns would reach their models together, after every turn's statements, and all
    forty answers would end together and want Discord at once. The earliest message's work is
    served first: when the first model is asked, many of the questions are not admitted yet.

    The questions arrive while another connection holds the database's write lock, so every
    admission waits at once whatever the machine's load, and the order they are served in is
    the cog's alone."""
    channels = [FIRST_OF_MANY + n for n in range(40)]
    settings = settings_for(tmp_path)
    admitted_when_asked: list[int] = []

    def count_admitted(request: SeenRequest) -> Reply:
        with contextlib.closing(sqlite3.connect(settings.db_path)) as db:
            admitted = db.execute("SELECT COUNT(*) FROM channel_locks").fetchone()[0]
        admitted_when_asked.append(admitted)
        return answer("Yes.")

    model = LLMServer(default=count_admitted)
    await model.start()
    bot = await start_rest_bot(library, discord_rest, settings, chain_for(model), channels)
    try:
        with contextlib.closing(sqlite3.connect(settings.db_path, isolation_level=None)) as db:
            db.execute("BEGIN IMMEDIATE")
            for channel in channels:
                bot.say(f"{bot.mention()} is it raining?", channel=channel)
            await asyncio.sleep(0.5)  # every question's admission waits for the write lock
            db.execute("COMMIT")
        async with asyncio.timeout(30):
            await bot.settled()
        assert [bot.contents(channel) for channel in channels] == [["Yes."]] * len(channels)
        # first-in-first-out: all 40 admitted first; first-come: 22 on a loaded CI run
        assert admitted_when_asked[0] <= len(channels) * 3 // 4
    finally:
        await bot.stop()
        await model.close()


@pytest.mark.slow  # sixty answers at the token's pace
async def test_two_processes_on_one_token_stay_under_the_global_limit_together(
    library: Library, discord_rest: DiscordRestServer, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Two bots of one token on one database (as two processes would be), thirty channels each,
    all asked at once: each takes half the token's budget, so the token's busiest second stays
    under Discord's 50 and nothing is refused; every channel is answered."""
    channels = [FIRST_OF_MANY + n for n in range(60)]
    settings = settings_for(tmp_path)
    bots = [
        await start_rest_bot(library, discord_rest, settings, chain_for(llm_server), half)
        for half in (channels[0::2], channels[1::2])
    ]
    try:
        async with asyncio.timeout(10):  # each has counted the other
            while any(bot.chat.pacing.budget.processes != 2 for bot in bots):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        llm_server.script(*[answer("Here is the answer.\n\nAnd more of it.") for _ in channels])
        for bot in bots:
            for channel in bot.channel_ids:
                bot.say(f"{bot.mention()} hello", channel=channel)
        async with asyncio.timeout(30):
            for bot in bots:
                await bot.settled()
        for bot in bots:
            for channel in bot.channel_ids:
                assert bot.contents(channel) == ["Here is the answer.\n\nAnd more of it."]
        assert discord_rest.rate_limited == NOTHING_REFUSED
        assert discord_rest.busiest_second() <= 50
    finally:
        for bot in bots:
            await bot.stop()
