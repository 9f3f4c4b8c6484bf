"""A message the database refuses for good is answered with the error notice, not lost in silence.

A busy or unreachable database is waited out (tests/cog/test_lost_messages.py); an error no retry
would cure (here the table of admitted messages is gone) used to escape the message handler as
an unhandled exception: the message got no answer and no notice, and only the log knew.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.cog_settings import SHORT_BUDGETS, chain_for, settings_for
from tests.support.databases import DatabaseUnderTest
from tests.support.dpy import start_dpy_bot, stop_dpy_bot
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import OpenNextcord
from tests.support.scripts import answer
from tomori.delivery.notices import GENERATION_ERROR

BROKEN = "DROP TABLE admitted_messages"


async def test_nextcord_a_message_the_database_refuses_gets_the_error_notice(
    database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    llm_server.script(answer("First answer."), answer("Never sent."))
    nc.say(f"{nc.mention()} one")
    await nc.settled()
    await database.execute(BROKEN)

    nc.say(f"{nc.mention()} two")
    await nc.settled()
    assert nc.discord.contents() == ["First answer."]
    assert nc.discord.embeds() == [GENERATION_ERROR.title]
    assert len(llm_server.requests) == 1


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_discordpy_a_message_the_database_refuses_gets_the_error_notice(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    dpy = await start_dpy_bot(settings_for(tmp_path), chain_for(llm_server), monkeypatch)
    try:
        llm_server.script(answer("First answer."), answer("Never sent."))
        await dpy.say(f"{dpy.mention()} one")
        await dpy.settled()
        with closing(sqlite3.connect(tmp_path / "tomori.db")) as other:
            other.execute(BROKEN)

        await dpy.say(f"{dpy.mention()} two")
        await dpy.settled()
        messages = await dpy.bot_messages()
        assert [m.content for m in messages if m.content] == ["First answer."]
        assert [m.embeds[0].title for m in messages if m.embeds] == [GENERATION_ERROR.title]
        assert len(llm_server.requests) == 1
    finally:
        await stop_dpy_bot(dpy)
