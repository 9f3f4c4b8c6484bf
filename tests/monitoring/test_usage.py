"""Token usage through the cog: after each turn, what the providers reported is in the
database, one row per model per turn, on SQLite and on PostgreSQL."""

from __future__ import annotations

import time
from typing import Any

from tests.support.databases import DatabaseUnderTest
from tests.support.llm_server import LLMServer, Reply, sse
from tests.support.nextcord_fake import ALICE, BOB, CHANNEL_ID, NextcordBot, OpenNextcord
from tests.support.openai_wire import usage_chunk
from tests.support.scripts import answer, tool_call
from tomori.config.models import ModelChain

SHORT = {
    "stream_first_token_timeout_ms": 2_000,
    "stream_sdk_call_timeout_ms": 2_000,
    "stream_abandoned_settle_timeout_ms": 100,
    "typing_keepalive_interval_ms": 50,
}
USAGE_ROWS = (
    "SELECT channel_id, requester_id, message_id, model, input_tokens, output_tokens,"
    " recorded_at FROM token_usage"
)


def two_models(server: LLMServer) -> ModelChain:
    return ModelChain.from_env(
        {
            "TOMORI_MODELS": "openai:primary-model,openai:fallback-model",
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": f"{server.base_url}/v1",
        }
    )


async def usage_rows(nc: NextcordBot, database: DatabaseUnderTest) -> list[tuple[Any, ...]]:
    """The usage rows another process reads once the cog has written what it recorded."""
    assert nc.chat.runtime.metrics is not None
    await nc.chat.runtime.metrics.flushed()
    return sorted(await database.rows(USAGE_ROWS))


async def test_each_turn_records_its_requester_channel_model_and_tokens(
    database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(database.settings(**SHORT), two_models(llm_server))
    llm_server.script(answer("Sixteen characters"), answer("Twelve chars"))
    first = nc.say(f"{nc.mention()} one")
    await nc.settled()
    second = nc.say(f"{nc.mention()} two", author=BOB, name="bob")
    await nc.settled()
    rows = await usage_rows(nc, database)
    assert [row[:6] for row in rows] == sorted(
        [
            (str(CHANNEL_ID), str(ALICE), first["id"], "openai:primary-model", 10, 4),
            (str(CHANNEL_ID), str(BOB), second["id"], "openai:primary-model", 10, 3),
        ]
    )
    assert all(abs(row[6] - time.time()) < 60 for row in rows)


async def test_a_turn_sums_its_passes_and_keeps_each_model_apart(
    database: DatabaseUnderTest, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(database.settings(**SHORT), two_models(llm_server))
    calls_the_clock = tool_call("current_time", "{}")
    with_usage = Reply(body=[*calls_the_clock.body[:-1], sse(usage_chunk(7, 3)), sse("[DONE]")])
    llm_server.script(with_usage, answer(""), answer("It is late."))
    asked = nc.say(f"{nc.mention()} what time is it?")
    await nc.settled()
    assert nc.discord.contents() == ["It is late."]
    rows = await usage_rows(nc, database)
    assert [row[3:6] for row in rows] == [
        ("openai:fallback-model", 10, 2),  # it answered
        ("openai:primary-model", 17, 3),  # a tool call, then an empty answer
    ]
    assert {row[2] for row in rows} == {asked["id"]}
