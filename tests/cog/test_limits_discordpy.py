"""The limits that protect a server, through a real discord.py bot (dpytest): the cooldown and
daily tokens, bot loops, a channel the bot may not post in and one that refused a send. Each
refusal is proven by the local LLM server never seeing the request; time is moved by
rewriting the stored rows."""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import discord
import discord.ext.test as dpytest
import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.dpy import DpyBot, start_dpy_bot, stop_dpy_bot
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer
from tomori.delivery.notices import cooldown_notice, quota_notice
from tomori_cog.listener.deliverability import REFUSED_FOR_S

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


async def test_a_channel_the_bot_cannot_post_in_gets_no_model_call(
    start: Start, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    dpy: DpyBot = await start()
    # The bot has no role of its own: denying @everyone denies it (dpytest keys a member's
    # overwrite so that discord.py does not find it).
    guild = dpy.channel.guild
    await dpytest.set_permission_overrides(guild.default_role, dpy.channel, send_messages=False)
    llm_server.script(*[answer("Nobody would see this.")] * 2)
    with caplog.at_level(logging.WARNING):
        await dpy.say(f"{dpy.mention()} hello")
        await dpy.say(f"{dpy.mention()} hello?")
        await dpy.settled()
    assert llm_server.requests == []
    lines = [
        r.getMessage() for r in caplog.records if r.name == "tomori_cog.listener.deliverability"
    ]
    assert len(lines) == 1
    assert "no send_messages permission" in lines[0]


async def test_a_channel_that_refused_a_send_is_left_alone_for_ten_minutes(
    start: Start, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    dpy: DpyBot = await start()
    refusing = True
    send = dpy.bot.http.send_message

    async def maybe_refused(channel_id: int, *, params: Any) -> Any:
        # dpytest's fake finds the channel in its caller's locals: keep it there for it.
        channel = sys._getframe(1).f_locals.get("channel")  # noqa: F841
        if refusing:
            response = type("Response", (), {"status": 403, "reason": "Forbidden"})()
            raise discord.Forbidden(response, {"code": 50001, "message": "Missing Access"})
        return await send(channel_id, params=params)

    monkeypatch.setattr(dpy.bot.http, "send_message", maybe_refused)
    llm_server.script(*[answer("You will not see this.")] * 4)
    await dpy.say(f"{dpy.mention()} hello")
    await dpy.settled()
    await dpy.say(f"{dpy.mention()} hello?")
    await dpy.settled()
    assert len(llm_server.requests) == 1
    refusing = False
    deliverability = dpy.service._gate.deliverability
    later = deliverability.clock() + REFUSED_FOR_S + 1
    deliverability.clock = lambda: later
    await dpy.say(f"{dpy.mention()} and now?")
    await dpy.settled()
    assert len(llm_server.requests) == 2
    assert (await shown(dpy))[0] == ["You will not see this."]
