"""A model's context budget through the cog, on both libraries: a long history and a long file
sent to a small model are fitted to its context (the oldest history first, an attachment's
text, the trigger's own too, cut before a message is left out), never the system prompt, the
persona or the trigger; a message longer than the whole context is told so, sent once; a
refusal that names a smaller context is asked once more, fitted to
it, and answered; an admin's chain may lower a model's context, never raise it past the
author's; every pass of the tool loop fits, a tool result too long for it cut with a note the
model reads.

The model server counts tokens its own way (tests/support/token_window.py), refuses a request
over its context as OpenAI does, and reports each request's tokens as usage.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.bots import OpenBot, Posted
from tests.support.cog_settings import SHORT_BUDGETS, chain_for, settings_for
from tests.support.conversation import shown
from tests.support.databases import DatabaseUnderTest
from tests.support.discord_rest import DiscordRestServer
from tests.support.files import FileServer
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import OpenRestBot, conversation, posted, user_message
from tests.support.scripts import counted_answer, tool_call
from tests.support.tomori_commands import said
from tests.support.world import CHANNEL_ID, GUILD_ID, Person
from tomori.config.settings import DEFAULT_SYSTEM_PROMPT
from tomori.memory import MemoryStore, Place, Scope
from tomori.memory.store import Bounds
from tomori.prompt.budget import CUT_MARKER
from tomori.prompt.tool_cuts import CUT_NOTE
from tomori.summary import Said, SummaryStore

ANSWER = "Here is what I make of it."
OLD_LINE = "an old story about the harbour and its boats, told again at length " * 6
"""About a hundred tokens, however counted: thirty of them overflow a 2,000-token model."""
LOG = "".join(f"line {n}: the service answered slowly, retrying the request\n" for n in range(200))


@pytest.fixture
async def small_model() -> AsyncIterator[LLMServer]:
    """A model whose context holds 2,000 tokens, answering every request that fits."""
    server = LLMServer(default=counted_answer(ANSWER), context_tokens=2_000)
    await server.start()
    yield server
    await server.close()


async def test_a_long_history_and_file_fit_a_small_model_keeping_the_prompt_and_the_trigger(
    tmp_path: Path, small_model: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    bot = await open_bot(
        settings_for(tmp_path, history_limit=40),
        chain_for(small_model, "openai:test-model+context=2000"),
    )
    for n in range(30):
        bot.seed(f"({n}) {OLD_LINE}", by=Person.BOB)
    log = files.attachment("service.log", LOG.encode(), "text/plain")
    await bot.say("the log from last night", by=Person.BOB, attachments=[log])
    await bot.say(f"{bot.mention()} what went wrong last night?")
    async with asyncio.timeout(10):
        await bot.settled()

    assert await bot.contents() == [ANSWER]  # answered, at the first ask
    assert len(small_model.requests) == 1
    assert small_model.counted[0] <= 2_000
    messages = small_model.requests[0].body["messages"]
    assert messages[0] == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
    texts = shown(small_model)
    assert texts[-1] == "alice: @Tomori what went wrong last night?"
    assert not any(text.startswith("bob: (0) ") for text in texts)  # the oldest went first
    [with_log] = [text for text in texts if text.startswith("bob: the log from last night")]
    assert "line 0: the service" in with_log  # the file's start is kept, the rest cut
    assert with_log.endswith(CUT_MARKER)
    assert "line 199:" not in with_log


async def test_a_big_file_on_the_message_answered_is_cut_before_the_history_is_left_out(
    tmp_path: Path, small_model: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    """35 short messages and a trigger carrying a file far bigger than the model: the file is
    cut to its quarter of the room first, and only the oldest messages that still do not fit
    are left out (all 35 went, the request using 1,036 of 1,500 tokens, before)."""
    bot = await open_bot(
        settings_for(tmp_path, history_limit=40),
        chain_for(small_model, "openai:test-model+context=2000"),
    )
    for n in range(35):
        bot.seed(f"H{n:02d}X the quick brown fox jumps over the lazy dog", by=Person.BOB)
    notes = files.attachment("notes.txt", ("FILELINE " + LOG * 20).encode(), "text/plain")
    await bot.say(f"{bot.mention()} read this", attachments=[notes])
    async with asyncio.timeout(10):
        await bot.settled()

    assert await bot.contents() == [ANSWER]
    assert len(small_model.requests) == 1
    texts = shown(small_model)
    assert texts[-1].startswith("alice: @Tomori read this")
    assert "FILELINE" in texts[-1]  # the file's start is kept, the rest cut
    assert texts[-1].endswith(CUT_MARKER)
    kept = [n for n in range(35) if any(text.startswith(f"bob: H{n:02d}X") for text in texts)]
    assert len(kept) >= 10  # what the file's quarter, the prompt and the tools leave: a dozen
    assert kept == list(range(35 - len(kept), 35))  # the newest stay; only the oldest go


async def test_a_message_longer_than_the_models_whole_context_is_told_so_and_sent_once(
    tmp_path: Path, small_model: LLMServer, open_bot: OpenBot
) -> None:
    """Nothing can be cut from the message answered: its refusal is not asked again with the
    very same request, and the asker is told their message is too long (before, the request
    went twice and the channel read "An issue while trying to stream the response")."""
    small_model.context_tokens = 1_000
    bot = await open_bot(
        settings_for(tmp_path), chain_for(small_model, "openai:test-model+context=1000")
    )
    long = "the quick brown fox jumps over the lazy dog while reading long texts " * 56
    await bot.say(f"{bot.mention()} {long}")
    async with asyncio.timeout(10):
        await bot.settled()

    assert small_model.counted[0] > 1_000  # refused as too long
    assert len(small_model.requests) == 1  # and never sent again as it was
    assert await bot.embeds() == ["Message Too Long"]
    [notice] = [e for m in await bot.messages() for e in m.embeds]
    assert "too long for the AI model to read" in notice["description"]


async def test_a_refusal_naming_a_smaller_context_is_asked_again_fitted_to_it_and_answered(
    tmp_path: Path, small_model: LLMServer, open_bot: OpenBot
) -> None:
    """Told 4,000 tokens, the model holds 1,200: its refusal says so, and the turn asks it
    once more within 1,200, and answers; the next turn fits at once."""
    small_model.context_tokens = 1_200
    bot = await open_bot(
        settings_for(tmp_path, history_limit=40),
        chain_for(small_model, "openai:test-model+context=4000"),
    )
    for n in range(30):
        bot.seed(f"({n}) {OLD_LINE}", by=Person.BOB)
    await bot.say(f"{bot.mention()} tell me the story")
    async with asyncio.timeout(10):
        await bot.settled()

    assert await bot.contents() == [ANSWER]
    assert len(small_model.requests) == 2
    assert small_model.counted[0] > 1_200  # refused
    assert small_model.counted[1] <= 1_200
    assert shown(small_model, 1)[-1] == "alice: @Tomori tell me the story"

    await bot.say(f"{bot.mention()} and again?")
    async with asyncio.timeout(10):
        await bot.settled()
    assert len(small_model.requests) == 3  # learned: no refusal this time
    assert small_model.counted[2] <= 1_200
    assert (await bot.contents())[-1] == ANSWER


async def test_a_persona_answering_a_small_model_keeps_its_persona_whatever_the_history(
    open_rest_bot: OpenRestBot, discord_rest: DiscordRestServer, tmp_path: Path
) -> None:
    model = LLMServer(default=counted_answer("Aria sings."), context_tokens=1_000)
    await model.start()
    try:
        settings = settings_for(tmp_path, history_memory_channels=0, history_limit=50)
        bot = await open_rest_bot(settings, chain_for(model, "openai:test-model+context=1000"))
        bot.allow_webhooks()
        await bot.persona("add", name="Aria", prompt="You are Aria, a cheerful bard.")
        for n in range(40):
            discord_rest.add_message(user_message(f"({n}) {OLD_LINE}", channel=CHANNEL_ID))
        bot.say("ARIA, sing the harbour song")
        async with asyncio.timeout(10):
            await bot.settled(CHANNEL_ID)
    finally:
        await model.close()

    assert [m.content for m in posted(discord_rest)] == ["Aria sings."]
    assert len(model.counted) == 1  # fitted at the first ask
    assert model.counted[0] <= 1_000
    seen = conversation(model.requests[0])
    assert seen[0] == ("system", "You are Aria, a cheerful bard.")
    assert seen[-1][1].endswith("ARIA, sing the harbour song")
    assert "(0) " not in "".join(text for _, text in seen)


async def test_an_admins_chain_may_lower_a_models_context_never_raise_it(
    tmp_path: Path, small_model: LLMServer, open_bot: OpenBot
) -> None:
    """A larger request is the author's tokens: an admin's `+context` above the author's size
    for the model is held to it, one below it is what the requests are fitted to."""
    bot = await open_bot(
        settings_for(tmp_path, history_limit=40),
        chain_for(small_model, "openai:test-model+context=2000"),
    )
    said(await bot.tomori("model", models="openai:test-model+context=100000"))
    _, shown = said(await bot.tomori("show"))
    assert "Context: openai:test-model 2000 tokens (its +context), 500 of them" in shown
    for n in range(30):
        bot.seed(f"({n}) {OLD_LINE}", by=Person.BOB)
    await bot.say(f"{bot.mention()} how long is it?")
    async with asyncio.timeout(10):
        await bot.settled()
    assert await bot.contents() == [ANSWER]
    assert small_model.counted[0] <= 2_000  # within the author's 2,000, not the admin's

    said(await bot.tomori("model", models="openai:test-model+context=1000"))
    _, shown = said(await bot.tomori("show"))
    assert "Context: openai:test-model 1000 tokens (its +context), 250 of them" in shown
    await bot.say(f"{bot.mention()} and now?")
    async with asyncio.timeout(10):
        await bot.settled()
    assert small_model.counted[-1] <= 1_000 - 250


def page(name: str, words: int) -> str:
    """A long public message, `name` first so the part of it kept is known."""
    return f"{name}: " + " ".join(f"{name}-entry-{n} of the archive" for n in range(words))


async def test_each_pass_of_the_tool_loop_fits_the_model_and_a_long_tool_result_is_cut(
    tmp_path: Path, small_model: LLMServer, open_bot: OpenBot
) -> None:
    """Three messages read with read_message hold more than a 2,000-token model: each pass
    after a read is fitted again, the biggest result cut with a note the model reads, so the
    model server refuses none of them and the answer is posted."""
    public = CHANNEL_ID + 1
    bot = await open_bot(
        settings_for(tmp_path), chain_for(small_model, "openai:test-model+context=2000")
    )
    reads = [
        bot.seed(page("alpha", 60), channel=public),
        bot.seed(page("beta", 12), channel=public),
        bot.seed(page("gamma", 60), channel=public),
    ]
    small_model.script(
        *[
            tool_call("read_message", json.dumps({"reference": link(posted)}), call_id=f"r{n}")
            for n, posted in enumerate(reads)
        ]
    )
    await bot.say(f"{bot.mention()} what do the three archive messages say?")
    async with asyncio.timeout(10):
        await bot.settled()

    assert await bot.contents() == [ANSWER]
    assert len(small_model.requests) == 4  # three reads and the answer, none refused
    assert all(tokens <= 2_000 for tokens in small_model.counted)
    last = small_model.requests[-1].body["messages"]
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert len(results) == 3
    cut = [result for result in results if CUT_NOTE in result]  # the model is told of each
    assert cut
    assert CUT_NOTE not in results[1]
    assert "beta-entry-11" in results[1]  # the smallest is whole
    assert any("-entry-0 of the archive" in result for result in cut)  # a cut keeps the start
    asked = [m["content"] for m in last if m["role"] == "user"][-1]
    assert asked.endswith("what do the three archive messages say?")  # the trigger is kept


def link(posted: Posted) -> str:
    return f"https://discord.com/channels/{GUILD_ID}/{posted.channel}/{posted.id}"


FILLER = (
    "Alice mentioned once, at some length, the weather over the harbour that week: grey skies, "
    "a cold wind from the north, boats kept in, and the long queue at the bakery by the pier {n}"
)
"""A memory of nearly 200 characters that no question here is about."""
SUMMARY = "\n\n".join(
    [
        "Bob is planning the harbour festival for the first Saturday of June.",
        *(f"Paragraph {n}: {OLD_LINE}" for n in range(4)),
        "The last paragraph: the fireworks were cancelled.",
    ]
)
"""A summary of a long channel, its first paragraph the one that matters."""


async def test_the_memories_and_the_summary_take_their_share_of_a_small_model_and_no_more(
    database: DatabaseUnderTest, small_model: LLMServer, open_bot: OpenBot
) -> None:
    """A 2,000-token model: ten long memories and a long summary would take the whole room,
    leaving out the recent history; each note is cut to an eighth of it instead, the memory
    the question is about and the summary's start kept, and the recent history is sent."""
    settings = database.settings(**{**SHORT_BUDGETS, "summaries": True}, history_limit=40)
    bot = await open_bot(settings, chain_for(small_model, "openai:test-model+context=2000"))
    opened = await database.open()
    memories = MemoryStore(opened, Bounds(300, 100))
    alice = Place(str(GUILD_ID), str(CHANNEL_ID), str(Person.ALICE.id))
    await memories.save(alice, Scope.MEMBER, "Alice's cat is called Mochi and sleeps all day")
    for n in range(9):
        await memories.save(alice, Scope.MEMBER, FILLER.format(n=n))
    covered = [Said("1", str(Person.BOB.id), "bob: the festival")]
    summaries = SummaryStore(opened)
    began = await summaries.begin(str(GUILD_ID), str(CHANNEL_ID))
    await summaries.save(str(GUILD_ID), str(CHANNEL_ID), SUMMARY, covered, began)
    for n in range(5):
        bot.seed(f"({n}) recent: {OLD_LINE[:120]}", by=Person.BOB)
    await bot.say(f"{bot.mention()} what is my cat called?")
    async with asyncio.timeout(10):
        await bot.settled()

    assert await bot.contents() == [ANSWER]
    assert len(small_model.requests) == 1
    assert small_model.counted[0] <= 2_000
    messages = small_model.requests[0].body["messages"]
    assert messages[0] == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
    sent = json.dumps(messages, ensure_ascii=False)
    assert "@Tomori what is my cat called?" in sent
    assert all(f"({n}) recent: " in sent for n in range(5))  # the recent history, whole
    assert "Alice's cat is called Mochi" in sent  # what the question is about, first
    assert sent.count("the long queue at the bakery") < 9  # the rest cut to the share
    assert "Bob is planning the harbour festival" in sent  # the summary's start
    assert "the fireworks were cancelled" not in sent  # its end cut
