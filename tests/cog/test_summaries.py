"""Channel summaries through a bot of each library, on SQLite and PostgreSQL: what fell out of
a long channel's window is folded, in the background, into a summary a later turn's request
holds before the history; the summarizing request is the model server's to tell apart (its
instruction); a deleted message's text leaves the summary, and so does a member's whole
`/memory forget-all`; a member who turned memories off is in no summary; a summarizing
request that stalls never holds a turn's answer.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from tests.support.bots import OpenBot
from tests.support.cog_settings import SHORT_BUDGETS, chain_for
from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer, Reply, SeenRequest, stall
from tests.support.scripts import answer
from tests.support.waiting import until
from tests.support.world import GUILD_ID, Person
from tomori.config.settings import Settings
from tomori.summary.folding import INSTRUCTION, NOTE_HEADER

WINDOW = 3


def windowed(database: DatabaseUnderTest) -> Settings:
    return database.settings(**{**SHORT_BUDGETS, "summaries": True}, history_limit=WINDOW)


def summarizing(request: SeenRequest) -> bool:
    """Whether the request is a summary's fold (its instruction), not a turn's."""
    messages = request.body.get("messages", [])
    return any(INSTRUCTION in str(message.get("content")) for message in messages)


def folded(request: SeenRequest) -> Reply:
    """The summarizing model's answer: the messages it was given to take in, as a summary."""
    (asked,) = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
    lines = asked.split("oldest first:\n", 1)[1]
    return answer("Earlier: " + " / ".join(lines.splitlines()))


@pytest.fixture
async def summarizer() -> AsyncIterator[LLMServer]:
    """A model server that folds summaries as `folded` does and answers turns "Sure."."""
    server = LLMServer(lambda request: folded(request) if summarizing(request) else answer("Sure."))
    await server.start()
    yield server
    await server.close()


def turns(server: LLMServer) -> list[str]:
    """Every turn's request (no summary's), each as one text."""
    return [
        json.dumps(r.body["messages"], ensure_ascii=False)
        for r in server.requests
        if r.path.endswith("/chat/completions") and not summarizing(r)
    ]


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 20.0) -> None:
    """Wait for a state the database shows; the budget only bounds a broken run."""
    async with asyncio.timeout(within):
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def summary_text(database: DatabaseUnderTest) -> str:
    rows = await database.rows("SELECT text FROM channel_summaries")
    return " ".join(text for (text,) in rows)


async def test_a_long_channels_summary_is_shown_before_the_history_on_a_later_turn(
    database: DatabaseUnderTest, summarizer: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(windowed(database), chain_for(summarizer))
    for n in range(2 * WINDOW):
        await bot.say(f"ferret fact {n}", by=Person.BOB)
    await bot.say(f"{bot.mention()} hello")
    await bot.settled()
    first = turns(summarizer)[-1]
    assert "ferret fact 0" not in first
    assert NOTE_HEADER not in first  # no summary yet
    await eventually(lambda: _holds(database, "ferret fact 2"))
    assert "ferret fact 3" not in await summary_text(database)  # the window's are not in it
    rows = await database.rows("SELECT guild_id, channel_id FROM channel_summaries")
    assert len(rows) == 1
    await bot.say(f"{bot.mention()} what did Bob say?")
    await bot.settled()
    later = turns(summarizer)[-1]
    assert NOTE_HEADER in later
    assert "ferret fact 1" in later  # fell out of the window, shown in the summary
    assert later.index(NOTE_HEADER) < later.index(f"ferret fact {2 * WINDOW - 1}")  # before it
    # The summary's tokens are the bot's: counted in the server's day, as no member's.
    await eventually(lambda: _bots_usage(database))


async def test_a_thread_has_a_summary_of_its_own(
    database: DatabaseUnderTest, summarizer: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(windowed(database), chain_for(summarizer))
    starter = bot.seed("release checklist for 2.0")
    bot.open_thread(starter.id)  # a thread started from a message takes its ID
    for n in range(2 * WINDOW):
        bot.seed(f"channel talk {n}")
    for n in range(2 * WINDOW):
        bot.seed(f"thread step {n}", channel=starter.id)
    await bot.say(f"{bot.mention()} what is left?", channel=starter.id)
    await bot.settled(starter.id)
    await eventually(lambda: _holds(database, "thread step 2"))
    rows = await database.rows("SELECT channel_id, text FROM channel_summaries")
    assert [channel for channel, _ in rows] == [str(starter.id)]
    assert "channel talk" not in rows[0][1]
    await bot.say(f"{bot.mention()} and in the channel?")
    await bot.settled()
    assert "thread step" not in turns(summarizer)[-1]  # the thread's summary stays in it


async def test_with_summaries_off_no_summary_is_written_nor_asked_for(
    database: DatabaseUnderTest, summarizer: LLMServer, open_bot: OpenBot
) -> None:
    settings = database.settings(**SHORT_BUDGETS, history_limit=WINDOW)  # summaries off
    bot = await open_bot(settings, chain_for(summarizer))
    for n in range(2 * WINDOW):
        await bot.say(f"filler {n}", by=Person.BOB)
    for _ in range(2):
        await bot.say(f"{bot.mention()} hi")
        await bot.settled()
    assert not any(summarizing(r) for r in summarizer.requests)
    assert NOTE_HEADER not in turns(summarizer)[-1]
    assert await database.rows("SELECT text FROM channel_summaries") == []


async def test_a_deleted_messages_text_leaves_the_summary(
    database: DatabaseUnderTest, summarizer: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(windowed(database), chain_for(summarizer))
    said = [await bot.say(f"note {n}: plain", by=Person.BOB) for n in range(WINDOW)]
    secret = await bot.say("my locker code is 4471", by=Person.BOB)
    for n in range(WINDOW):
        await bot.say(f"chatter {n}", by=Person.BOB)
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    await eventually(lambda: _holds(database, "4471"))
    assert said
    await bot.delete(secret)
    await eventually(lambda: _lacks(database, "4471"))
    await bot.say(f"{bot.mention()} anything new?")
    await bot.settled()
    assert "4471" not in turns(summarizer)[-1]
    assert "4471" not in await summary_text(database)


async def test_forget_all_drops_every_summary_that_covered_the_members_messages(
    database: DatabaseUnderTest, summarizer: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(windowed(database), chain_for(summarizer))
    for n in range(WINDOW):
        await bot.say(f"Bob's pet is a newt named Quillon {n}", by=Person.BOB)
    for n in range(WINDOW):
        await bot.say(f"chatter {n}")
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    await eventually(lambda: _holds(database, "Quillon"))
    await bot.memory("forget-all", by=Person.BOB)
    assert await database.rows("SELECT text FROM channel_summaries") == []
    assert await database.rows("SELECT message_id FROM summary_sources") == []


async def test_a_member_who_turned_memories_off_is_left_out_of_every_fold(
    database: DatabaseUnderTest, summarizer: LLMServer, open_bot: OpenBot
) -> None:
    bot = await open_bot(windowed(database), chain_for(summarizer))
    await bot.memory("off", by=Person.BOB)
    for n in range(WINDOW):
        await bot.say(f"Bob's pet is a newt named Quillon {n}", by=Person.BOB)
        await bot.say(f"chatter {n}")
    for n in range(WINDOW):
        await bot.say(f"later {n}")
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    await eventually(lambda: _holds(database, "chatter 2"))
    folds = [json.dumps(r.body, ensure_ascii=False) for r in summarizer.requests if summarizing(r)]
    assert folds
    assert not any("Quillon" in fold for fold in folds)  # the model never read them
    assert "Quillon" not in await summary_text(database)
    sources = await database.rows("SELECT author_id FROM summary_sources")
    assert str(Person.BOB.id) not in {author for (author,) in sources}


async def test_a_burst_of_a_left_out_members_messages_does_not_stop_the_channels_summary(
    database: DatabaseUnderTest, summarizer: LLMServer, open_bot: OpenBot
) -> None:
    """Bob turned memories off, then wrote more in a row than one fold reads: the folds pass
    his messages by and go on to Alice's (each read the same three of his, kept nothing, and
    the channel's summary stopped for everyone)."""
    bot = await open_bot(windowed(database), chain_for(summarizer))
    await bot.memory("off", by=Person.BOB)
    for n in range(2 * WINDOW):
        await bot.say(f"early {n}")
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    await eventually(lambda: _holds(database, "early"))
    for n in range(WINDOW + 1):
        await bot.say(f"Bob's burst {n}", by=Person.BOB)
    for round_ in range(4):
        for part in "abc":
            await bot.say(f"round {round_} {part}")
        await bot.say(f"{bot.mention()} and now?")
        await bot.settled()

    def folds() -> str:
        return json.dumps([r.body for r in summarizer.requests if summarizing(r)])

    await until(lambda: "round 0 a" in folds())  # the folds went on past Bob's burst
    assert "burst" not in folds()


async def test_a_stalled_summary_never_holds_an_answer(
    database: DatabaseUnderTest, open_bot: OpenBot
) -> None:
    stalled = LLMServer(lambda r: Reply(body=[stall()]) if summarizing(r) else answer("Here!"))
    await stalled.start()
    try:
        bot = await open_bot(windowed(database), chain_for(stalled))
        for n in range(2 * WINDOW):
            await bot.say(f"filler {n}", by=Person.BOB)
        await bot.say(f"{bot.mention()} quick question")
        await bot.settled()
        assert "Here!" in await bot.contents()
        await until(lambda: any(summarizing(r) for r in stalled.requests))  # once answered
        await bot.say(f"{bot.mention()} and another")
        await bot.settled()
        assert (await bot.contents()).count("Here!") == 2  # answered while the fold stalls
        assert stalled.in_flight == 1  # the summary still waits on its model
        await bot.stop()  # its owner cancels it: nothing is left running
        await until(lambda: stalled.in_flight == 0)
    finally:
        await stalled.close()


ANSWER_S = 0.4
SLOW = "Here is the one."
"""A turn's answer in the test below: sixteen characters, streamed in eight pieces, each
after a pause of an eighth of `ANSWER_S`."""


async def test_a_fold_is_asked_for_only_once_the_answer_is_written(
    database: DatabaseUnderTest, open_bot: OpenBot
) -> None:
    """Started beside the answer, a fold's Discord read and model request share the bot's
    process with it (about 20 ms of a local model's first text, bench/summary_bench.py): the
    summarizing request comes after the answer's stream has ended."""
    arrived: dict[str, float] = {}

    def reply(request: SeenRequest) -> Reply:
        arrived.setdefault("fold" if summarizing(request) else "turn", time.monotonic())
        return folded(request) if summarizing(request) else answer(SLOW, gap=ANSWER_S / 8)

    model = LLMServer(reply)
    await model.start()
    try:
        bot = await open_bot(windowed(database), chain_for(model))
        for n in range(2 * WINDOW):
            await bot.say(f"filler {n}", by=Person.BOB)
        await bot.say(f"{bot.mention()} quick question")
        await bot.settled()
        await until(lambda: "fold" in arrived)
    finally:
        await model.close()
    assert arrived["fold"] - arrived["turn"] >= ANSWER_S  # the answer was whole by then


async def _holds(database: DatabaseUnderTest, text: str) -> bool:
    return text in await summary_text(database)


async def _lacks(database: DatabaseUnderTest, text: str) -> bool:
    return text not in await summary_text(database)


async def _bots_usage(database: DatabaseUnderTest) -> bool:
    rows = await database.rows("SELECT guild_id FROM token_usage WHERE requester_id IS NULL")
    return bool(rows) and all(guild == str(GUILD_ID) for (guild,) in rows)  # the server's day
