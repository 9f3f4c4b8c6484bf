"""Channel summaries racing a forget, through a bot of each library, on SQLite and PostgreSQL:
a fold reads what fell out of the window, asks its model, then writes; a member's
`/memory forget-all` or a delete of a message it read may land while the model writes. The
fold's model is held until the forget has landed, so the race is played, not hoped for: the
summary kept holds none of it, and no later fold takes the forgotten member's messages in
again, though Discord still holds them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from tests.cog.test_summaries import (
    WINDOW,
    eventually,
    folded,
    summarizing,
    summary_text,
    turns,
    windowed,
)
from tests.support.bots import OpenBot
from tests.support.cog_settings import chain_for
from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer, Reply, SeenRequest, hold_until
from tests.support.scripts import answer
from tests.support.waiting import until
from tests.support.world import Person

FOLD_LOGGER = "tomori.turns.summaries"
ENDED = ("summary now covers", "kept none")
"""How a fold's end is logged: it kept its summary, or kept none."""


class HeldSummarizer:
    """A model server that answers turns "Sure." and holds each summary's fold until the test
    releases it (then folds as `folded` does)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.server = LLMServer(self._reply)

    def _reply(self, request: SeenRequest) -> Reply:
        if not summarizing(request):
            return answer("Sure.")
        return Reply(body=[hold_until(self.release), *folded(request).body])

    def folds(self) -> int:
        return sum(1 for request in self.server.requests if summarizing(request))


@pytest.fixture
async def held() -> AsyncIterator[HeldSummarizer]:
    summarizer = HeldSummarizer()
    await summarizer.server.start()
    yield summarizer
    summarizer.release.set()
    await summarizer.server.close()


def folds_ended(caplog: pytest.LogCaptureFixture) -> int:
    return sum(
        1
        for record in caplog.records
        if record.name == FOLD_LOGGER and any(said in record.getMessage() for said in ENDED)
    )


async def test_a_forget_all_landing_while_a_fold_writes_leaves_nothing_of_the_member(
    database: DatabaseUnderTest,
    held: HeldSummarizer,
    open_bot: OpenBot,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=FOLD_LOGGER)
    bot = await open_bot(windowed(database), chain_for(held.server))
    for n in range(WINDOW):
        await bot.say(f"Bob's pet is a newt named Quillon {n}", by=Person.BOB)
    for n in range(WINDOW):
        await bot.say(f"chatter {n}")
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    await until(lambda: held.server.in_flight == 1 and held.folds() == 1)  # the fold read Bob's
    await bot.memory("forget-all", by=Person.BOB)  # lands before the fold writes
    held.release.set()
    await until(lambda: folds_ended(caplog) == 1)
    assert "Quillon" not in await summary_text(database)
    assert await database.rows("SELECT author_id FROM summary_sources") == []
    # Bob's messages are still in Discord: the next fold, from the channel's start again,
    # leaves them out and takes in the rest.
    await bot.say(f"{bot.mention()} and now?")
    await bot.settled()
    await until(lambda: folds_ended(caplog) == 2)
    text = await summary_text(database)
    assert "chatter 0" in text
    assert "Quillon" not in text
    await bot.say(f"{bot.mention()} what do you know?")
    await bot.settled()
    assert "chatter 0" in turns(held.server)[-1]  # the summary is shown...
    assert "Quillon" not in turns(held.server)[-1]  # ...and holds nothing of Bob's


async def test_a_delete_landing_while_a_fold_writes_leaves_the_text_out(
    database: DatabaseUnderTest,
    held: HeldSummarizer,
    open_bot: OpenBot,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=FOLD_LOGGER)
    bot = await open_bot(windowed(database), chain_for(held.server))
    secret = await bot.say("my locker code is 4471", by=Person.BOB)
    for n in range(WINDOW - 1):
        await bot.say(f"note {n}", by=Person.BOB)
    for n in range(WINDOW):
        await bot.say(f"chatter {n}")
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    await until(lambda: held.server.in_flight == 1 and held.folds() == 1)
    await bot.delete(secret)  # as the fold's model writes
    held.release.set()
    await until(lambda: folds_ended(caplog) == 1)
    await eventually(lambda: _lacks(database, "4471"))  # the drop's task may end after it


async def _lacks(database: DatabaseUnderTest, text: str) -> bool:
    return text not in await summary_text(database)
