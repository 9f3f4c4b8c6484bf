"""The limits that protect a server, through a real discord.py bot (dpytest): the cooldown and
daily tokens, bot loops, a channel the bot may not post in and one that refused a send. Each
refusal is proven by the local LLM server never seeing the request; time is moved by
rewriting the stored rows."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import discord.ext.test as dpytest
import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.dpy import DpyBot, start_dpy_bot, stop_dpy_bot
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer
from tomori.notices import cooldown_notice, quota_notice

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SLOW_DOWN = cooldown_notice(0).title
DAILY_LIMIT = quota_notice(0).title

Start = Callable[..., Any]


@pytest.fixture
async def start(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Start]:
    bots: list[DpyBot] = []

    async def started(**settings: Any) -> DpyBot:
        bot = await start_dpy_bot(
            settings_for(tmp_path, **settings), chain_for(llm_server), monkeypatch
        )
        bots.append(bot)
        return bot

    yield started
    for bot in bots:
        await stop_dpy_bot(bot)


def rewrite(tmp_path: Path, sql: str) -> None:
    """Another process moves the stored times, as a later minute or day would find them."""
    with closing(sqlite3.connect(tmp_path / "tomori.db")) as connection, connection:
        connection.execute(sql)


async def shown(dpy: DpyBot) -> tuple[list[str], list[str]]:
    """The bot's messages: their text, and the titles of its notices."""
    messages = await dpy.bot_messages()
    texts = [m.content for m in messages if m.content]
    return texts, [embed.title or "" for m in messages for embed in m.embeds]


async def test_inside_the_cooldown_no_model_is_asked_and_the_user_is_told_once(
    start: Start, llm_server: LLMServer, tmp_path: Path
) -> None:
    dpy: DpyBot = await start(user_cooldown_ms=60_000)
    llm_server.script(answer("First."), answer("A minute later."))
    for text in ("one", "two", "three"):
        await dpy.say(f"{dpy.mention()} {text}")
        await dpy.settled()
    assert len(llm_server.requests) == 1
    assert await shown(dpy) == (["First."], [SLOW_DOWN])
    rewrite(tmp_path, "UPDATE user_limits SET admitted_at = admitted_at - 61")
    await dpy.say(f"{dpy.mention()} four")
    await dpy.settled()
    assert await shown(dpy) == (["First.", "A minute later."], [SLOW_DOWN])


async def test_over_the_daily_tokens_no_model_is_asked_until_the_utc_day_resets(
    start: Start, llm_server: LLMServer, tmp_path: Path
) -> None:
    dpy: DpyBot = await start(user_daily_tokens=14)
    llm_server.script(answer("Sixteen characters"), answer("A new day."))
    for text in ("one", "two", "three"):
        await dpy.say(f"{dpy.mention()} {text}")
        await dpy.settled()
    assert len(llm_server.requests) == 1
    assert await shown(dpy) == (["Sixteen characters"], [DAILY_LIMIT])
    await dpy.service.metrics.flushed()  # type: ignore[union-attr]
    rewrite(tmp_path, "UPDATE token_usage SET recorded_at = recorded_at - 86400")
    rewrite(tmp_path, "UPDATE user_limits SET quota_noticed_at = quota_noticed_at - 86400")
    await dpy.say(f"{dpy.mention()} four")
    await dpy.settled()
    assert await shown(dpy) == (["Sixteen characters", "A new day."], [DAILY_LIMIT])


async def test_bots_start_at_most_max_bot_turns_in_a_row_until_a_human_speaks(
    start: Start, llm_server: LLMServer
) -> None:
    dpy: DpyBot = await start(reply_to_bots=True, max_bot_turns=2)
    user = dpytest.backend.make_user("otherbot", 1)
    user.bot = True
    other_bot = dpytest.backend.make_member(user, dpy.channel.guild)
    llm_server.script(*[answer("Beep.")] * 5)
    for _ in range(4):
        await dpy.say(f"{dpy.mention()} beep", member=other_bot)
        await dpy.settled()
    assert len(llm_server.requests) == 2
    await dpy.say("you two, calm down")
    await dpy.say(f"{dpy.mention()} beep", member=other_bot)
    await dpy.settled()
    assert len(llm_server.requests) == 3
