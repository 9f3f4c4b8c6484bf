"""Faults and careless input, through the cog: each ends in its documented outcome and the
channel stays usable."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import aiohttp
import nextcord
import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer, Reply, drop, pause, sse, stall
from tests.support.nextcord_fake import (
    CHANNEL_ID,
    NextcordBot,
    OpenNextcord,
    discord_error,
)
from tests.support.openai_wire import chunk
from tests.support.scripts import answer, http_error, in_parts, stalled_after
from tomori.config.settings import Delivery
from tomori.delivery.notices import GENERATION_ERROR


@pytest.fixture
def open_bot(tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord) -> Any:
    async def start(**overrides: object) -> NextcordBot:
        return await open_nextcord(settings_for(tmp_path, **overrides), chain_for(llm_server))

    return start


async def served_afterwards(nc: NextcordBot, llm_server: LLMServer) -> None:
    """The channel is usable: the next question is answered."""
    nc.discord.fail_sends = lambda body: None
    llm_server.script(answer("Still here."))
    nc.say(f"{nc.mention()} still there?")
    await nc.settled()
    assert nc.discord.contents()[-1] == "Still here."


async def test_a_429_on_an_edit_is_waited_out(open_bot: Any, llm_server: LLMServer) -> None:
    nc = await open_bot(delivery=Delivery.EDIT, stream_edit_interval_ms=10)
    limited = [discord_error(nextcord.HTTPException, 429, 0, "You are being rate limited.")]
    nc.discord.fail_edits = lambda body: limited.pop() if limited else None
    llm_server.script(answer("one two three four five six", pieces=6, gap=0.02))
    nc.say(f"{nc.mention()} count")
    await nc.settled()
    assert limited == []  # the 429 happened
    assert nc.discord.contents() == ["one two three four five six"]


async def test_a_channel_deleted_mid_stream_ends_the_turn_as_unreachable(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot()
    sends = 0

    def deleted_after_first(body: dict[str, Any]) -> BaseException | None:
        nonlocal sends
        sends += 1
        return (
            discord_error(nextcord.NotFound, 404, 10003, "Unknown Channel") if sends > 1 else None
        )

    nc.discord.fail_sends = deleted_after_first
    llm_server.script(in_parts("First.\n\n", "Second.\n\nThird."))  # 2 sends
    with caplog.at_level(logging.WARNING):
        nc.say(f"{nc.mention()} talk")
        await nc.settled()
    assert nc.discord.contents() == ["First."]
    assert nc.discord.embeds() == []  # nothing more is tried in a channel that is gone
    assert any("unreachable" in record.getMessage() for record in caplog.records)
    await served_afterwards(nc, llm_server)


async def test_an_interaction_answered_after_the_deadline_is_logged_not_raised(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot()
    llm_server.script(stalled_after("Busy.\n\n"))
    nc.say(f"{nc.mention()} slow")
    await nc.discord.sent_event.wait()
    expired = discord_error(nextcord.NotFound, 404, 10062, "Unknown interaction")
    nc.discord.fail_interactions = lambda: expired
    with caplog.at_level(logging.WARNING):
        nc.bot._connection.parse_interaction_create(nc.kill_payload())
        await nc.settled()
    assert any("could not answer /kill" in record.getMessage() for record in caplog.records)
    nc.discord.fail_interactions = lambda: None
    await served_afterwards(nc, llm_server)  # the kill itself went through


@pytest.mark.parametrize(
    ("reply", "notice"),
    [
        (Reply(body=[sse(chunk("Half an")), drop()]), "Generation Error"),
        (Reply(status=200, body=[sse(chunk("ok")), sse("{oops")]), "Generation Error"),
        (http_error(429), "Rate Limited"),
        (http_error(401), "Provider Refused the Key"),
    ],
    ids=["connection-reset", "malformed-stream", "rate-limited", "key-refused"],
)
async def test_provider_faults_end_in_one_notice_and_the_channel_stays_usable(
    open_bot: Any, llm_server: LLMServer, reply: Reply, notice: str
) -> None:
    nc = await open_bot()
    llm_server.script(reply)
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    assert nc.discord.embeds() == [notice]
    await served_afterwards(nc, llm_server)


async def test_a_ten_megabyte_message_is_cut_before_it_reaches_the_model(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    llm_server.script(answer("That was long."))
    nc.say(f"{nc.mention()} " + "x" * 10_000_000)
    await nc.settled()
    last = llm_server.requests[0].body["messages"][-1]["content"]
    assert len(last) <= 8_100
    assert nc.discord.contents() == ["That was long."]


async def test_a_message_of_only_a_mention_is_answered(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    llm_server.script(answer("You called?"))
    nc.say(nc.mention())
    await nc.settled()
    assert nc.discord.contents() == ["You called?"]


async def test_a_storm_of_triggers_while_stalled_is_answered_in_order(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot(queue_per_member=8)  # one member asks all eight
    llm_server.script(*[answer(f"Answer {n}.", gap=0.01) for n in range(8)])
    for n in range(8):
        nc.say(f"{nc.mention()} question {n}")
    await nc.settled()
    await asyncio.sleep(0)
    assert nc.discord.contents() == [f"Answer {n}." for n in range(8)]


@pytest.mark.parametrize(
    "error",
    [
        aiohttp.ServerDisconnectedError(),
        aiohttp.ClientConnectionError("reset"),
        ConnectionResetError("reset by peer"),
        TimeoutError(),
    ],
    ids=["server-disconnected", "client-connection", "os-error", "timeout"],
)
async def test_a_send_lost_to_a_connection_error_is_logged_and_the_rest_goes_out(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture, error: BaseException
) -> None:
    """Asked once more (tests/cog/test_discord_failures.py), and lost to the same error again."""
    nc = await open_bot()
    failures = [error, error]
    nc.discord.fail_sends = lambda body: failures.pop() if failures else None
    llm_server.script(in_parts("First.\n\n", "Second.\n\nThird."))
    with caplog.at_level(logging.WARNING):
        nc.say(f"{nc.mention()} talk")
        await nc.settled()
    assert failures == []
    assert " ".join(nc.discord.contents()).split() == ["Second.", "Third."]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("was not delivered" in text and str(CHANNEL_ID) in text for text in warnings)
    assert not any("never retrieved" in r.getMessage() for r in caplog.records)


async def test_a_typing_indicator_lost_to_a_connection_error_does_not_touch_the_turn(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot()
    nc.discord.fail_typing = aiohttp.ServerDisconnectedError
    llm_server.script(answer("Answered anyway."))
    with caplog.at_level(logging.INFO):
        nc.say(f"{nc.mention()} hello")
        await nc.settled()
    assert nc.discord.contents() == ["Answered anyway."]
    assert nc.discord.embeds() == []
    assert any("typing indicator stopped" in r.getMessage() for r in caplog.records)
    assert not any("never retrieved" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_an_answer_discord_refused_is_not_reported_as_an_empty_answer(
    open_bot: Any, llm_server: LLMServer, delivery: Delivery
) -> None:
    nc = await open_bot(delivery=delivery, stream_edit_interval_ms=10)
    refused = discord_error(nextcord.HTTPException, 400, 50035, "Invalid Form Body")
    nc.discord.fail_sends = lambda body: refused if body.get("content") else None
    llm_server.script(answer("A fine answer.\n\nIn two parts."))
    nc.say(f"{nc.mention()} talk")
    await nc.settled()
    assert nc.discord.contents() == []
    assert "Empty Response" not in nc.discord.embeds()  # the model did answer
    await served_afterwards(nc, llm_server)


@pytest.mark.parametrize("ending", ["drop", "stall"])
@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_a_stream_that_stops_early_shows_its_complete_lines_and_the_fallback_goes_on(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    delivery: Delivery,
    ending: str,
) -> None:
    """One rule for a dropped connection and a stall: the lines the model finished are shown,
    the line it stopped in is not (what edit mode already showed of it stays), and the next
    model goes on from what the channel shows."""
    settings = settings_for(tmp_path, delivery=delivery, stream_edit_interval_ms=10)
    nc = await open_nextcord(settings, chain_for(llm_server, "openai:first,openai:second"))
    written = "First, a whole line.\nRun `npm i` to install it, or `yarn"
    stop = drop() if ending == "drop" else stall()
    # the stop comes a moment later: long enough for edit mode to show what came
    llm_server.script(
        Reply(body=[sse(chunk(written)), pause(0.3), stop]), answer("Or yarn add it.")
    )
    nc.say(f"{nc.mention()} how?")
    await nc.settled()
    # Edit mode showed the line as it came, and a shown message only grows: it keeps what
    # it showed, and drops only what it held back (a run that may still open inline code).
    shown = "First, a whole line."
    if delivery is Delivery.EDIT:
        shown += "\nRun `npm i` to install it, or"
    assert nc.discord.contents() == [shown, "Or yarn add it."]
    assert nc.discord.embeds() == ["Fallback Model Used"]
    continued = llm_server.requests[1].body["messages"]
    assert continued[-2]["role"] == "assistant"
    assert continued[-2]["content"].strip() == shown


async def test_the_only_model_stopping_early_keeps_its_complete_lines_and_says_so(
    open_bot: Any, llm_server: LLMServer
) -> None:
    written = "First, a whole line.\nRun `npm i` to install it, or `yarn"
    llm_server.script(Reply(body=[sse(chunk(written)), drop()]))
    nc = await open_bot()
    nc.say(f"{nc.mention()} how?")
    await nc.settled()
    assert nc.discord.contents() == ["First, a whole line."]
    assert nc.discord.embeds() == ["Generation Error"]


async def test_a_history_read_lost_to_a_connection_error_is_answered_without_history(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    nc.discord.fail_reads = aiohttp.ServerDisconnectedError
    llm_server.script(answer("Answered anyway."))
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    assert nc.discord.contents() == ["Answered anyway."]
    assert nc.discord.embeds() == []


async def test_a_trigger_that_cannot_be_read_back_gets_the_error_notice(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    llm_server.script(answer("First answer.", pieces=4, gap=0.05))
    nc.say(f"{nc.mention()} one")
    async with asyncio.timeout(10):
        while not llm_server.requests:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
    second = nc.say(f"{nc.mention()} two")
    async with asyncio.timeout(10):
        while second["id"] not in nc.chat._parts.live_messages:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
    # As after a restart: the queued message is no longer in memory and must be read back,
    # and that read gets no answer.
    nc.chat._parts.live_messages.take(second["id"])
    nc.discord.fail_reads = aiohttp.ServerDisconnectedError
    await nc.settled()
    assert nc.discord.contents() == ["First answer."]
    assert nc.discord.embeds() == [GENERATION_ERROR.title]
    assert len(llm_server.requests) == 1
