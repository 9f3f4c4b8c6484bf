"""A member's stop word sent right behind their own queued messages, on the Discord-faithful
REST server with each library's real client: the stop ends their answer and takes what they
queued with it, in one step. None of those messages is answered or sent to the model (the
channel is never handed to one of them while the stop's clearing waits for the database);
each shows ⏹️ and its "Why no answer?" says her stop cleared it; another member's message
queued behind them is answered. Ten rounds in one test: the race lost one in three."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.conversation import shown
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import OpenRestBot, RestBot, said
from tests.support.scripts import answer, stalled_after
from tests.support.waiting import until
from tests.support.world import Person
from tomori.commands import WHY
from tomori.config.settings import ShowProgress
from tomori.delivery.progress import MARKS, Stage

STOPPED = MARKS[Stage.STOPPED]
ROUNDS = 10
"""The race lost about one round in three in the black-box trial (and on 4cc92d8 here)."""


@pytest.mark.slow  # ten rounds on the faithful server's rate limits: a minute a library
async def test_a_stop_word_right_behind_their_queued_messages_clears_them_all_every_time(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path, progress=ShowProgress.REACTIONS)  # follow-ups off
    bot = await open_rest_bot(settings, chain_for(llm_server))
    for round_ in range(ROUNDS):
        await stop_word_round(bot, llm_server, round_)


async def stop_word_round(bot: RestBot, llm_server: LLMServer, round_: int) -> None:
    """Alice's answer streams, held; she sends two more questions, Bob one, and she says stop
    at once (hers may still be on their way to the database)."""
    think, bobs = f"Thinking {round_}.", f"For Bob {round_}."
    llm_server.script(stalled_after(f"{think}\n\n"), answer(bobs))
    asked = len(llm_server.requests)
    bot.say(f"{bot.mention()} think {round_}")
    await until(lambda: think in bot.contents())
    queued = [bot.say(f"{bot.mention()} {word} {round_}") for word in ("one", "two")]
    bot.say(f"{bot.mention()} for Bob {round_}", by=Person.BOB)
    bot.say("stop")
    await bot.settled()

    asked_for = [  # each request's question (a note on stopped answers may follow it)
        shown(llm_server, n)[-1].splitlines()[0] for n in range(asked, len(llm_server.requests))
    ]
    assert asked_for == [f"alice: @Tomori think {round_}", f"bob: @Tomori for Bob {round_}"]
    assert bot.contents()[-2:] == [think, bobs]
    await until(lambda: all(bot.server.reactions_on(m) == [STOPPED] for m in queued))
    for message in queued:  # cleared, never handed the channel (not even to stop it)
        told = said(await bot.on_message(WHY.name, bot.payload_of(message)))
        assert "Cleared from the queue by its sender's own /kill or stop word." in told
