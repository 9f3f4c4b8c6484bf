from __future__ import annotations

import asyncio

from tests.support.databases import DatabaseUnderTest
from tomori.generation.results import TurnUsage
from tomori.monitoring.metrics import Metrics


async def test_a_count_recorded_while_a_batch_is_written_is_written_too(
    database: DatabaseUnderTest,
) -> None:
    metrics = Metrics(await database.open())
    metrics.record("stream_sdk_timeout", "openai:primary")
    await asyncio.sleep(0)  # the first batch is now being written
    metrics.record("fallback_used", "openai:fallback")
    assert await metrics.counts() == {
        ("stream_sdk_timeout", "openai:primary"): 1,
        ("fallback_used", "openai:fallback"): 1,
    }


async def test_counts_add_up_across_batches_and_close_writes_the_rest(
    database: DatabaseUnderTest,
) -> None:
    metrics = Metrics(await database.open())
    for _ in range(3):
        metrics.record("tool_failed", "now")
        await asyncio.sleep(0)
    metrics.record("tool_failed", "now")
    await metrics.close()
    assert await database.rows("SELECT name, label, count FROM metrics") == [
        ("tool_failed", "now", 4)
    ]


async def test_usage_recorded_while_a_batch_is_written_is_written_too(
    database: DatabaseUnderTest,
) -> None:
    metrics = Metrics(await database.open())
    metrics.record("fallback_used", "openai:fallback")
    await asyncio.sleep(0)  # the first batch is now being written
    metrics.record_usage(TurnUsage("7", "42", "99", "openai:primary", 120, 30))
    metrics.record_usage(TurnUsage("7", None, None, "gemini:flash", 5, 0))
    await metrics.close()
    assert await database.rows(
        "SELECT channel_id, requester_id, message_id, model, input_tokens, output_tokens"
        " FROM token_usage ORDER BY model"
    ) == [("7", None, None, "gemini:flash", 5, 0), ("7", "42", "99", "openai:primary", 120, 30)]
