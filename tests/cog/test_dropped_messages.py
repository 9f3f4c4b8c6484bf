"""A queued message dropped unanswered is told so, once, as a reply; nothing is lost in silence.

A message that waited in the queue past `TOMORI_QUEUE_MAX_AGE_MS` is not answered when its turn
comes. A direct trigger (a mention, a reply, a DM) hears so once, as a reply to it; a message
the channel answers on its own stays silent, with a log line.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.console_process import bot_environment, finished, start_bot
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import ALICE, CHANNEL_ID, NextcordBot, OpenNextcord
from tests.support.scripts import answer
from tests.support.tomori_commands import said
from tomori.delivery.notices import NOT_ANSWERED

QUEUE_MAX_AGE_MS = 400
SLOW = answer("The first answer, slowly.", pieces=6, gap=0.15)  # about 0.9 s: past the age


async def test_a_mention_dropped_from_the_queue_for_age_is_told_once_as_a_reply(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(
        settings_for(tmp_path, queue_max_age_ms=QUEUE_MAX_AGE_MS), chain_for(llm_server)
    )
    llm_server.script(SLOW, answer("Never asked for."))
    nc.say(f"{nc.mention()} one")
    second = nc.say(f"{nc.mention()} two")
    await nc.settled()

    assert nc.discord.contents() == ["The first answer, slowly."]
    assert nc.discord.embeds() == [NOT_ANSWERED.title]
    notice = nc.discord.sent[-1]
    assert notice["message_reference"]["message_id"] == int(second["id"])
    assert notice["allowed_mentions"] == {"parse": []}
    assert len(llm_server.requests) == 1


async def test_a_respond_dropped_from_the_queue_for_age_is_told_naming_its_asker(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    """A `/respond` has no message to reply to: the channel hears it was not answered, naming
    who asked (a mention in an embed pings no one)."""
    nc = await open_nextcord(
        settings_for(tmp_path, queue_max_age_ms=QUEUE_MAX_AGE_MS), chain_for(llm_server)
    )
    llm_server.script(SLOW, answer("Never asked for."))
    nc.say(f"{nc.mention()} one")
    await asyncio.wait_for(llm_server.request_arrived.wait(), 10)  # its answer has begun
    assert said(await nc.respond("tell a joke"))[0] == "Answering"  # queued behind it
    await nc.settled()

    assert nc.discord.contents() == ["The first answer, slowly."]
    assert nc.discord.embeds() == [NOT_ANSWERED.title]
    notice = nc.discord.sent[-1]
    assert f"<@{ALICE}>" in notice["embeds"][0]["description"]
    assert notice["allowed_mentions"] == {"parse": []}
    assert len(llm_server.requests) == 1


async def test_an_autoreply_message_dropped_for_age_stays_silent_and_is_logged(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = settings_for(
        tmp_path, queue_max_age_ms=QUEUE_MAX_AGE_MS, channels=frozenset({CHANNEL_ID})
    )
    nc: NextcordBot = await open_nextcord(settings, chain_for(llm_server))
    llm_server.script(SLOW, answer("Never asked for."))
    with caplog.at_level(logging.INFO):
        nc.say("one")
        second = nc.say("two")
        await nc.settled()
    assert nc.discord.contents() == ["The first answer, slowly."]
    assert nc.discord.embeds() == []
    assert any(
        second["id"] in record.getMessage() and "dropped" in record.getMessage()
        for record in caplog.records
    )


async def test_a_console_line_dropped_for_age_prints_that_it_was_not_answered(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    llm_server.script(SLOW, answer("Never asked for."))
    env = bot_environment(llm_server, tmp_path, TOMORI_QUEUE_MAX_AGE_MS=str(QUEUE_MAX_AGE_MS))
    process = await start_bot("--console", env=env)
    out, err = await finished(process, b"one\ntwo\n")
    assert process.returncode == 0, err
    assert "The first answer, slowly." in out
    assert f"[{NOT_ANSWERED.title}, replying to #2]" in out
    assert out.count(NOT_ANSWERED.title) == 1
    assert len(llm_server.requests) == 1
