"""A provider that rate limits or refuses the key: waited once, passed on, or told plainly.

A 429 whose Retry-After is short next to the idle budget is waited out once and the same model
asked again; a longer one (or one that gives no time) moves to the next model at once. When
every model failed, the asker is told the provider is rate limiting, or refused the key, rather
than "an issue"; the log keeps the provider's own words.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer, Reply
from tests.support.nextcord_fake import NextcordBot, OpenNextcord
from tests.support.scripts import answer, http_error
from tomori.delivery.notices import KEY_REFUSED, KILL_STOPPED, RATE_LIMITED


def rate_limited(retry_after: str) -> Reply:
    return Reply(
        status=429,
        json_body={"error": {"message": "Rate limit reached, please slow down"}},
        headers=[("retry-after", retry_after)],
    )


async def open_bot(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord, models: str
) -> NextcordBot:
    # an idle budget of 2 s: a Retry-After up to 0.5 s is waited out
    return await open_nextcord(settings_for(tmp_path), chain_for(llm_server, models))


async def test_a_short_retry_after_is_waited_out_and_the_same_model_answers(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_bot(tmp_path, llm_server, open_nextcord, "openai:first,openai:second")
    llm_server.script(rate_limited("0.3"), answer("After the wait."))
    started = time.monotonic()
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["After the wait."]
    assert nc.discord.embeds() == []  # the same model answered: no fallback, no error
    assert [r.body["model"] for r in llm_server.requests] == ["first", "first"]
    assert 0.3 <= time.monotonic() - started < 3  # it waited the Retry-After, once


async def test_a_long_retry_after_moves_to_the_next_model_at_once(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_bot(tmp_path, llm_server, open_nextcord, "openai:first,openai:second")
    llm_server.script(rate_limited("3600"), answer("The fallback answered."))
    started = time.monotonic()
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["The fallback answered."]
    assert nc.discord.embeds() == ["Fallback Model Used"]
    assert [r.body["model"] for r in llm_server.requests] == ["first", "second"]
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    ("reply", "notice", "logged"),
    [
        (rate_limited("3600"), RATE_LIMITED, "Rate limit reached"),
        (http_error(401), KEY_REFUSED, "HTTP 401 from the model"),
    ],
    ids=["rate-limited", "key-refused"],
)
async def test_the_only_model_failing_so_tells_the_asker_what_happened(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    caplog: pytest.LogCaptureFixture,
    reply: Reply,
    notice: object,
    logged: str,
) -> None:
    nc = await open_bot(tmp_path, llm_server, open_nextcord, "openai:only")
    llm_server.script(reply)
    with caplog.at_level(logging.WARNING):
        nc.say(f"{nc.mention()} hi")
        await nc.settled()
    assert nc.discord.embeds() == [getattr(notice, "title", None)]
    assert len(llm_server.requests) == 1
    assert any(logged in record.getMessage() for record in caplog.records)


async def test_kill_during_a_retry_after_wait_stops_at_once(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_bot(tmp_path, llm_server, open_nextcord, "openai:only")
    llm_server.script(rate_limited("0.5"), answer("Never asked for."))
    nc.say(f"{nc.mention()} hi")
    async with asyncio.timeout(5):
        await llm_server.request_arrived.wait()
    await asyncio.sleep(0.1)  # inside the wait
    started = time.monotonic()
    reply = await nc.kill()
    await nc.settled()
    assert time.monotonic() - started < 0.3
    assert reply["data"]["embeds"][0]["title"] == KILL_STOPPED.title
    assert len(llm_server.requests) == 1
    assert nc.discord.embeds() == []
