"""The tables that grow with use keep only what a rule still needs, on SQLite and PostgreSQL:
each rule of `tomori.policy.retention`, through its sweep, on rows written as the cog writes
them, with times on the database's own clock."""

from __future__ import annotations

import asyncio

from tests.support.cog_settings import SHORT_BUDGETS, chain_for
from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import OpenNextcord
from tomori.config.models import ModelChain
from tomori.memory import MemoryStore, Place, Scope
from tomori.memory.store import Bounds
from tomori.policy.limits import DAY_S
from tomori.policy.retention import (
    FROZEN,
    PERSONA_MESSAGES_KEPT_S,
    TAKES_FROZEN_KEPT_S,
    TAKES_OPEN_KEPT_S,
    sweep,
)
from tomori.providers.base import Usage
from tomori.store import Database
from tomori.summary.store import Said, SummaryStore
from tomori.turns.config import ChannelConfig
from tomori.turns.take_store import TakeStore
from tomori.turns.takes import Takes, TakeState

HOUR_S = 3600.0
ENDPOINT = "http://llm.example/v1"


def config_of(database: DatabaseUnderTest) -> ChannelConfig:
    environ = {
        "TOMORI_MODELS": "openai:primary,openai:fallback",
        "TOMORI_ALLOWED_MODELS": "openai:*",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": ENDPOINT,
    }
    return ChannelConfig(database.base, ModelChain.from_env(environ), environ)


async def now_of(database: Database) -> float:
    async with database.transaction() as tx:
        return await tx.now()


async def opened_now(database: DatabaseUnderTest) -> tuple[Database, float]:
    """The cog's own connection, and its clock now (rows are written relative to it)."""
    opened = await database.open()
    return opened, await now_of(opened)


async def test_token_usage_is_kept_for_its_days(
    database: DatabaseUnderTest,
) -> None:
    opened, now = await opened_now(database)
    ages = [400 * DAY_S, 3 * DAY_S, 2 * DAY_S + HOUR_S, 2 * DAY_S - HOUR_S, HOUR_S]
    for n, age in enumerate(ages):
        await database.execute(
            "INSERT INTO token_usage (channel_id, requester_id, model, input_tokens,"
            " output_tokens, guild_id, recorded_at) VALUES ('c', ?, 'openai:primary', 1, 1,"
            " 'g', ?)",
            (f"user-{n}", now - age),
        )
    result = await sweep(opened, database.base, config_of(database))
    assert result.token_usage == 3
    kept = await database.rows("SELECT requester_id FROM token_usage ORDER BY requester_id")
    assert kept == [("user-3",), ("user-4",)]  # within two days: the quota's day, status's

    longer = database.settings(token_usage_days=500)  # an author who bills from the table
    await database.execute(
        "INSERT INTO token_usage (channel_id, model, input_tokens, output_tokens, recorded_at)"
        " VALUES ('c', 'openai:primary', 1, 1, ?)",
        (now - 400 * DAY_S,),
    )
    assert (await sweep(opened, longer, config_of(database))).token_usage == 0


async def test_user_limits_go_once_idle_past_a_day_and_the_longest_cooldown(
    database: DatabaseUnderTest,
) -> None:
    opened, now = await opened_now(database)
    rows = {
        "idle": (now - 2 * DAY_S, None, None),
        "admitted lately": (now - HOUR_S, None, None),
        "told of its quota lately": (now - 3 * DAY_S, None, now - HOUR_S),
        "never admitted, told long ago": (None, now - 2 * DAY_S, None),
    }
    for user, (admitted, cooldown_told, quota_told) in rows.items():
        await database.execute(
            "INSERT INTO user_limits (guild_id, user_id, admitted_at, cooldown_noticed_at,"
            " quota_noticed_at) VALUES ('g', ?, ?, ?, ?)",
            (user, admitted, cooldown_told, quota_told),
        )
    chains = config_of(database)
    assert (await sweep(opened, database.base, chains)).user_limits == 2
    kept = await database.rows("SELECT user_id FROM user_limits ORDER BY user_id")
    assert kept == [("admitted lately",), ("told of its quota lately",)]

    # A server whose admins set a three-day cooldown: a window two days old still runs.
    await database.execute(
        "INSERT INTO user_limits (guild_id, user_id, admitted_at) VALUES ('g', 'slow', ?)",
        (now - 2 * DAY_S,),
    )
    await database.execute(
        "INSERT INTO server_settings (guild_id, cooldown_ms, updated_at) VALUES ('g', ?, ?)",
        (int(3 * DAY_S * 1000), now),
    )
    assert (await sweep(opened, database.base, chains)).user_limits == 0


async def test_persona_messages_are_kept_thirty_days(database: DatabaseUnderTest) -> None:
    opened, now = await opened_now(database)
    for message_id, age in [("old", PERSONA_MESSAGES_KEPT_S + HOUR_S), ("recent", DAY_S)]:
        await database.execute(
            "INSERT INTO persona_messages (message_id, channel_id, guild_id, name_key, posted_at)"
            " VALUES (?, 'c', 'g', 'aria', ?)",
            (message_id, now - age),
        )
    assert (await sweep(opened, database.base, config_of(database))).persona_messages
    assert await database.rows("SELECT message_id FROM persona_messages") == [("recent",)]


async def test_memories_are_kept_their_days_with_their_search_entries(
    database: DatabaseUnderTest,
) -> None:
    opened, now = await opened_now(database)
    store = MemoryStore(opened, Bounds(300, 100))
    place = Place("1", "11", "101")
    for text in ("an old quokka fact", "a fresh wombat fact"):
        await store.save(place, Scope.MEMBER, text)
    await database.execute(
        "UPDATE memories SET created_at = ? WHERE text = ?",
        (now - 31 * DAY_S, "an old quokka fact"),
    )
    assert (
        await sweep(opened, database.settings(memory_days=0), config_of(database))
    ).memories == 0
    swept = await sweep(opened, database.settings(memory_days=30), config_of(database))
    assert swept.memories == 1
    assert await database.rows("SELECT text FROM memories") == [("a fresh wombat fact",)]
    assert [m.text for m in await store.recall(place, "quokka", 5)] == ["a fresh wombat fact"]
    if database.engine == "sqlite":
        assert await database.rows("SELECT text FROM memories_fts") == [("a fresh wombat fact",)]


async def test_a_channel_summary_is_kept_the_memories_days_after_it_was_last_written(
    database: DatabaseUnderTest,
) -> None:
    opened, now = await opened_now(database)
    store = SummaryStore(opened)
    for channel, text in (("11", "an old summary"), ("12", "a fresh summary")):
        said = [Said(channel + "0", "101", "bob: hi")]
        await store.save("1", channel, text, said, await store.begin("1", channel))
    await database.execute(
        "UPDATE channel_summaries SET updated_at = ? WHERE text = ?",
        (now - 31 * DAY_S, "an old summary"),
    )
    assert (
        await sweep(opened, database.settings(memory_days=0), config_of(database))
    ).summaries == 0
    swept = await sweep(opened, database.settings(memory_days=30), config_of(database))
    assert swept.summaries == 1
    assert await database.rows("SELECT text FROM channel_summaries") == [("a fresh summary",)]
    assert await database.rows("SELECT channel_id FROM summary_sources") == [("12",)]


async def test_an_answers_takes_go_a_day_after_they_froze_or_a_month_after_their_last_press(
    database: DatabaseUnderTest,
) -> None:
    """Each answer written as the cog writes it (its first take, a second, a freeze as its
    channel goes on), then aged on the database's clock."""
    assert TakeState.FROZEN.value == FROZEN  # the sweep names the state a layer below
    opened, now = await opened_now(database)
    store = TakeStore(opened)
    ages = {
        "frozen long ago": (True, TAKES_FROZEN_KEPT_S + HOUR_S),
        "frozen lately": (True, TAKES_FROZEN_KEPT_S - HOUR_S),
        "open, untouched a month": (False, TAKES_OPEN_KEPT_S + HOUR_S),
        "open, pressed lately": (False, TAKES_FROZEN_KEPT_S + HOUR_S),
    }
    for n, (answer, (frozen, age)) in enumerate(ages.items()):
        channel = f"channel-{n}"
        takes = Takes(answer, channel, "g", "t", "u", None, (answer,), 0, 1, TakeState.OPEN)
        await store.first(takes, ["First take."], Usage(10, 5))
        await store.begin_making(answer)
        await store.made(answer, [answer], ["Second take."], Usage(10, 5))
        if frozen:
            assert await store.freeze(channel)
        await database.execute(
            "UPDATE answer_takes SET updated_at = ? WHERE answer_id = ?", (now - age, answer)
        )
    assert (await sweep(opened, database.base, config_of(database))).answer_takes == 2
    kept = ["frozen lately", "open, pressed lately"]
    assert sorted(await database.rows("SELECT answer_id FROM answer_takes")) == [
        (answer,) for answer in kept
    ]
    texts = await database.rows("SELECT DISTINCT answer_id FROM answer_take_texts")
    assert sorted(texts) == [(answer,) for answer in kept]  # a gone answer's texts went too
    assert await store.of("open, untouched a month") is None  # a press: no longer kept


async def test_model_health_is_forgotten_for_models_no_process_asks_at_their_endpoint(
    database: DatabaseUnderTest,
) -> None:
    opened, now = await opened_now(database)
    await database.execute(
        "INSERT INTO personas (guild_id, name_key, name, prompt, triggers, models, updated_at)"
        " VALUES ('g', 'aria', 'Aria', 'You are Aria.', '', 'openai:aria-model', ?)",
        (now,),
    )
    elsewhere = "http://other-server.example/v1"
    marks = [
        (ENDPOINT, "openai:primary", now),  # the environment's chain
        (ENDPOINT, "openai:aria-model", now),  # a persona's
        (ENDPOINT, "openai:abandoned", now),  # once in a chain, named by none now
        (elsewhere, "openai:other", now),  # another process's, which probes it when due
        (elsewhere, "openai:primary", now - 2 * HOUR_S),  # a server the bot moved from
    ]
    for endpoint, model, probe_at in marks:
        await database.execute(
            "INSERT INTO model_health (endpoint, model, ailment, sick_since, probe_at)"
            " VALUES (?, ?, 'stalled before its first token', ?, ?)",
            (endpoint, model, now - 3 * HOUR_S, probe_at),
        )
    assert (await sweep(opened, database.base, config_of(database))).model_health == 2
    kept = await database.rows("SELECT endpoint, model FROM model_health ORDER BY model")
    assert sorted(kept) == [
        (ENDPOINT, "openai:aria-model"),
        (ENDPOINT, "openai:primary"),
        (elsewhere, "openai:other"),
    ]


async def test_the_cog_sweeps_as_it_starts(
    database: DatabaseUnderTest, open_nextcord: OpenNextcord, llm_server: LLMServer
) -> None:
    _, now = await opened_now(database)
    await database.execute(
        "INSERT INTO token_usage (channel_id, model, input_tokens, output_tokens, recorded_at)"
        " VALUES ('c', 'openai:test-model', 1, 1, ?)",
        (now - 3 * DAY_S,),
    )
    await database.execute(
        "INSERT INTO persona_messages (message_id, channel_id, guild_id, name_key, posted_at)"
        " VALUES ('m', 'c', 'g', 'aria', ?)",
        (now - PERSONA_MESSAGES_KEPT_S - DAY_S,),
    )
    await open_nextcord(database.settings(**SHORT_BUDGETS), chain_for(llm_server))
    async with asyncio.timeout(10):
        while await database.rows(  # noqa: ASYNC110
            "SELECT 1 FROM token_usage UNION ALL SELECT 1 FROM persona_messages"
        ):
            await asyncio.sleep(0.02)
