"""The generation turn and the tool loop, end to end through the cog (nextcord) with the real
providers talking to the local LLM server."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import settings_for
from tests.support.gemini_wire import response, text_part
from tests.support.llm_server import LLMServer, Reply, sse, stall
from tests.support.nextcord_fake import (
    CHANNEL_ID,
    NextcordBot,
    OpenNextcord,
)
from tests.support.scripts import answer, http_error, in_parts, stalled_after, tool_call
from tomori.config.models import ModelChain
from tomori.config.settings import Delivery
from tomori.providers.base import JsonObject
from tomori.tools.registry import Tool, ToolContext, ToolFailure

FAST = {"stream_first_token_timeout_ms": 1000, "stream_sdk_call_timeout_ms": 300}
"""A stall caught in 300 ms of silence mid-answer; a first token given a second, which a
fallback answering at once takes well within even on a busy machine (at 300 ms, a fallback's
first token came late under load and the turn ended with no answer)."""


def two_models(server: LLMServer, first: str = "openai") -> ModelChain:
    return ModelChain.from_env(
        {
            "TOMORI_MODELS": f"{first}:primary-model,openai:fallback-model",
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": f"{server.base_url}/v1",
            "GEMINI_API_KEY": "gm-test",
            "GEMINI_BASE_URL": server.base_url,
        }
    )


@pytest.fixture
def open_bot(tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord) -> Any:
    async def start(first: str = "openai", **overrides: object) -> NextcordBot:
        settings = settings_for(tmp_path, **{**FAST, **overrides})
        return await open_nextcord(settings, two_models(llm_server, first))

    return start


def sent_messages(server: LLMServer, request: int) -> list[dict[str, Any]]:
    return server.requests[request].body["messages"]  # type: ignore[no-any-return]


async def test_primary_stalls_and_the_fallback_continues_its_text(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    llm_server.script(stalled_after("The first half,\n\n"), answer("and the second half."))
    nc.say(f"{nc.mention()} tell me")
    await nc.settled()
    assert nc.discord.contents() == ["The first half,", "and the second half."]
    assert nc.discord.embeds() == ["Fallback Model Used"]  # and no timeout notice
    continued = sent_messages(llm_server, 1)
    assert llm_server.requests[1].body["model"] == "fallback-model"
    assert {"role": "assistant", "content": "The first half,\n\n"} in continued
    assert "without repeating" in continued[-1]["content"]
    counts = await nc.chat.runtime.metrics.counts()
    assert counts[("stream_sdk_timeout", "openai:primary-model")] == 1
    assert counts[("fallback_used", "openai:fallback-model")] == 1


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_a_fallbacks_continuation_begins_its_message_without_the_joining_space(
    open_bot: Any, llm_server: LLMServer, delivery: Delivery
) -> None:
    nc = await open_bot(delivery=delivery, stream_edit_interval_ms=10)
    llm_server.script(stalled_after("The first half,\n\n"), answer(" and the second half."))
    nc.say(f"{nc.mention()} tell me")
    await nc.settled()
    assert nc.discord.contents() == ["The first half,", "and the second half."]


async def test_every_model_stalling_posts_exactly_one_timeout_notice(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    llm_server.script(stalled_after("Hmm\n\n"), Reply(body=[stall()]))
    nc.say(f"{nc.mention()} are you there")
    await nc.settled()
    assert nc.discord.embeds() == ["Response Timed Out"]


async def test_a_silent_turn_where_every_model_stalls_posts_nothing(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot(channels=frozenset({CHANNEL_ID}))
    llm_server.script(Reply(body=[stall()]), Reply(body=[stall()]))
    nc.say("no mention, just chatting in an auto-reply channel")
    await nc.settled()
    assert len(llm_server.requests) == 2
    assert nc.discord.embeds() == []


async def test_a_primary_refusing_the_key_falls_back(open_bot: Any, llm_server: LLMServer) -> None:
    nc = await open_bot()
    llm_server.script(http_error(401), answer("Fallback here."))
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["Fallback here."]
    assert nc.discord.embeds() == ["Fallback Model Used"]


async def test_every_model_failing_posts_one_error_notice(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    llm_server.script(http_error(429), http_error(500))
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.embeds() == ["Generation Error"]
    assert "HTTP" not in json.dumps(nc.discord.messages[CHANNEL_ID][-1]["embeds"])


async def test_a_gemini_primary_stalling_falls_back_to_openai(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot(first="gemini")
    llm_server.script(
        Reply(body=[sse(response(text_part("Gemini began,\n\n"))), stall()]),
        answer("OpenAI finished."),
    )
    nc.say(f"{nc.mention()} go")
    await nc.settled()
    assert nc.discord.contents() == ["Gemini began,", "OpenAI finished."]
    assert "streamGenerateContent" in llm_server.requests[0].path


async def test_a_tool_call_runs_and_the_model_answers_with_its_result(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    llm_server.script(
        tool_call("current_time", '{"timezone": "Asia/Tokyo"}', text="Let me check.\n\n"),
        answer("It is evening in Tokyo."),
    )
    nc.say(f"{nc.mention()} what time is it in Tokyo?")
    await nc.settled()
    assert nc.discord.contents() == ["Let me check.", "It is evening in Tokyo."]
    first = llm_server.requests[0].body
    assert {tool["function"]["name"] for tool in first["tools"]} >= {"current_time", "read_message"}
    follow_up = sent_messages(llm_server, 1)
    assert follow_up[-2]["content"] == "Let me check.\n\n"
    assert follow_up[-2]["tool_calls"][0]["function"]["name"] == "current_time"
    result = json.loads(follow_up[-1]["content"])
    assert result["result"]["timezone"] == "Asia/Tokyo"
    counts = await nc.chat.runtime.metrics.counts()
    assert counts[("tool_used", "current_time")] == 1


class FlakyTool:
    def __init__(self, delay: float = 0.0) -> None:
        self.runs = 0
        self.cancelled = 0
        self.delay = delay

    async def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> JsonObject:
        self.runs += 1
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise ToolFailure("the weather service is down")

    def tool(self) -> Tool:
        return Tool("weather", "The weather", {"type": "object", "properties": {}}, self.run)


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_the_answer_ceiling_counts_every_pass_of_the_turn(
    open_bot: Any, llm_server: LLMServer, delivery: Delivery
) -> None:
    long = "word " * 300
    first_pass = f"{long}\n\n{long}\n\n"
    nc = await open_bot(
        max_answer_chars=len(first_pass) + 5, delivery=delivery, stream_edit_interval_ms=10
    )
    llm_server.script(
        tool_call("current_time", "{}", text=first_pass),
        answer("A third message would pass the ceiling."),
    )
    nc.say(f"{nc.mention()} what time is it?")
    await nc.settled()
    shown = nc.discord.contents()
    assert " ".join(shown).split()[:600] == first_pass.split()
    assert "third" not in " ".join(shown)
    assert shown[-1].endswith("(The answer was cut here: it was too long.)")


async def test_five_tool_failures_in_a_row_end_the_turn_with_a_notice(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    flaky = FlakyTool()
    nc.bot.get_cog("Tomori").register_tool(flaky.tool())
    llm_server.script(*[tool_call("weather", "{}", call_id=f"c{n}") for n in range(5)])
    nc.say(f"{nc.mention()} weather?")
    await nc.settled()
    assert flaky.runs == 5
    assert nc.discord.embeds() == ["Tool Error Loop"]
    assert len(llm_server.requests) == 5
    last = json.loads(sent_messages(llm_server, 4)[-1]["content"])
    assert last["reason"] == "the weather service is down"


@pytest.mark.parametrize(
    ("arguments", "said"),
    [('{"city": "Par', "cut off"), ('{"city": Paris}', "not valid JSON")],
    ids=["cut-off", "invalid"],
)
async def test_arguments_that_cannot_be_used_are_never_run_and_the_model_is_told_why(
    open_bot: Any,
    llm_server: LLMServer,
    caplog: pytest.LogCaptureFixture,
    arguments: str,
    said: str,
) -> None:
    nc = await open_bot()
    flaky = FlakyTool()
    nc.bot.get_cog("Tomori").register_tool(flaky.tool())
    llm_server.script(tool_call("weather", arguments), answer("Sorry, try again."))
    with caplog.at_level(logging.WARNING):
        nc.say(f"{nc.mention()} weather in Paris?")
        await nc.settled()
    assert flaky.runs == 0
    reason = json.loads(sent_messages(llm_server, 1)[-1]["content"])["reason"]
    assert said in reason
    assert nc.discord.contents() == ["Sorry, try again."]
    logged = [r.getMessage() for r in caplog.records if "not run" in r.getMessage()]
    assert len(logged) == 1
    assert logged[0].startswith("tool call weather not run: its arguments")
    assert said in logged[0]


async def test_an_unknown_tool_is_named_unknown_to_the_model_and_the_log(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot()
    llm_server.script(tool_call("horoscope", "{}"), answer("I cannot do that."))
    with caplog.at_level(logging.WARNING):
        nc.say(f"{nc.mention()} my horoscope?")
        await nc.settled()
    reason = json.loads(sent_messages(llm_server, 1)[-1]["content"])["reason"]
    assert "there is no tool named 'horoscope'" in reason
    assert "current_time" in reason  # what it may call instead
    assert any("'horoscope', which is no tool" in r.getMessage() for r in caplog.records)
    assert nc.discord.contents() == ["I cannot do that."]


async def test_a_tool_that_runs_past_its_timeout_fails_and_the_turn_goes_on(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot(tool_execution_timeout_ms=200)
    slow = FlakyTool(delay=30)
    nc.bot.get_cog("Tomori").register_tool(slow.tool())
    llm_server.script(tool_call("weather", "{}"), answer("The tool was too slow."))
    nc.say(f"{nc.mention()} weather?")
    await nc.settled()
    assert slow.cancelled == 1
    reason = json.loads(sent_messages(llm_server, 1)[-1]["content"])["reason"]
    assert "did not finish" in reason
    assert nc.discord.contents() == ["The tool was too slow."]


async def test_kill_during_a_tool_cancels_it_and_the_next_message_is_served(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    slow = FlakyTool(delay=30)
    nc.bot.get_cog("Tomori").register_tool(slow.tool())
    llm_server.script(tool_call("weather", "{}", text="Checking.\n\n"), answer("Served."))
    nc.say(f"{nc.mention()} weather?")
    await nc.discord.sent_event.wait()
    while slow.runs == 0:  # noqa: ASYNC110
        await asyncio.sleep(0.005)
    reply = await nc.kill()
    assert reply["data"]["embeds"][0]["title"] == "Stream Stopped"
    await nc.settled()
    assert slow.cancelled == 1
    assert len(llm_server.requests) == 1  # no pass after the killed tool
    nc.say(f"{nc.mention()} again")
    await nc.settled()
    assert nc.discord.contents() == ["Checking.", "Served."]


async def test_a_long_tool_chain_says_still_working_then_gives_up_as_a_thinking_loop(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot(max_function_call_iterations=21)
    llm_server.script(*[tool_call("current_time", "{}", call_id=f"c{n}") for n in range(21)])
    nc.say(f"{nc.mention()} loop forever")
    await nc.settled()
    assert len(llm_server.requests) == 21  # and no fallback model after giving up
    assert nc.discord.embeds() == ["Still Working...", "Thinking Loop"]


async def test_read_message_reads_a_linked_message_of_this_server(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    quoted = nc.say("The launch is on Friday at noon.")
    link = f"https://discord.com/channels/{quoted['guild_id']}/{CHANNEL_ID}/{quoted['id']}"
    elsewhere = f"https://discord.com/channels/1/999999/{quoted['id']}"
    llm_server.script(
        tool_call("read_message", json.dumps({"reference": link}), call_id="a"),
        tool_call("read_message", json.dumps({"reference": elsewhere}), call_id="b"),
        answer("Friday at noon."),
    )
    nc.say(f"{nc.mention()} when is the launch? {link}")
    await nc.settled()
    found = json.loads(sent_messages(llm_server, 1)[-1]["content"])["result"]
    assert (found["author"], found["content"]) == ("alice", "The launch is on Friday at noon.")
    refused = json.loads(sent_messages(llm_server, 2)[-1]["content"])
    assert refused["status"] == "tool_execution_failed"
    assert nc.discord.contents() == ["Friday at noon."]


# -- the provider has finished; only delivery remains ----------------------------------------


def slow(
    text: str, seconds: float, started: asyncio.Event | None = None
) -> Callable[[dict[str, Any]], float]:
    """A `send_delay` hook: the message holding `text` takes `seconds` to land."""

    def delay(body: dict[str, Any]) -> float:
        if text not in (body.get("content") or ""):
            return 0.0
        if started is not None:
            started.set()
        return seconds

    return delay


@pytest.mark.slow  # waits out a slow send
async def test_a_last_send_slower_than_the_idle_budget_still_lands(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()  # idle budget 300 ms
    nc.discord.send_delay = slow("The last part.", 1.2)
    # (streamed over a second: the first message goes before the last part is in)
    llm_server.script(answer("First part.\n\nThe last part.", pieces=10, gap=0.1))
    nc.say(f"{nc.mention()} tell me")
    await nc.settled()
    assert nc.discord.contents() == ["First part.", "The last part."]
    assert nc.discord.embeds() == []  # no "Response Timed Out"
    assert len(llm_server.requests) == 1  # the answer was whole: no fallback
    counts = await nc.chat.runtime.metrics.counts()
    assert not any(name == "stream_sdk_timeout" for name, _ in counts)


@pytest.mark.slow  # waits out the delivery bound
async def test_a_send_that_never_lands_is_given_up_after_the_delivery_bound(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot(delivery_timeout_ms=300)
    nc.discord.send_delay = slow("The last part.", 60)
    llm_server.script(
        answer("First part.\n\nThe last part.", pieces=10, gap=0.1), answer("Next answer.")
    )
    nc.say(f"{nc.mention()} tell me")
    async with asyncio.timeout(10):
        await nc.settled()
    assert nc.discord.contents() == ["First part."]
    # the asker hears that the answer is cut short, not that the model timed out
    assert nc.discord.embeds() == ["Answer Cut Short"]
    assert len(llm_server.requests) == 1
    assert "delivery_timeout" in caplog.text
    counts = await nc.chat.runtime.metrics.counts()
    assert counts[("delivery_timeout", "openai:primary-model")] == 1
    nc.say(f"{nc.mention()} and now?")  # the channel is free again
    await nc.settled()
    assert nc.discord.contents() == ["First part.", "Next answer."]


async def test_kill_ends_the_wait_for_a_slow_last_send_at_once(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()  # the delivery bound is the default two minutes
    started = asyncio.Event()
    nc.discord.send_delay = slow("The last part.", 60, started)
    llm_server.script(in_parts("First part.\n\n", "The last part."))
    nc.say(f"{nc.mention()} tell me")
    await started.wait()
    reply = await nc.kill()
    assert reply["data"]["embeds"][0]["title"] == "Stream Stopped"
    async with asyncio.timeout(5):
        await nc.settled()
    assert nc.discord.contents() == ["First part."]
    assert nc.discord.embeds() == []


@pytest.mark.slow  # waits out slow sends
async def test_a_slow_send_while_the_model_still_streams_is_not_a_timeout(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()  # idle budget 300 ms; a chunk comes every 100 ms for about 2 s
    nc.discord.send_delay = slow("One.", 0.8)
    llm_server.script(answer("One.\n\nTwo.\n\nThree.", pieces=18, gap=0.1))
    nc.say(f"{nc.mention()} count")
    await nc.settled()
    assert nc.discord.contents() == ["One.", "Two.\n\nThree."]  # the rest gathered meanwhile
    assert nc.discord.embeds() == []


async def test_in_edit_mode_the_last_edit_waits_its_interval_whatever_the_delivery_bound(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot(
        delivery=Delivery.EDIT, stream_edit_interval_ms=600, delivery_timeout_ms=100
    )
    llm_server.script(answer("Hello there, this message grows.", pieces=4, gap=0.1))
    nc.say(f"{nc.mention()} grow")
    await nc.settled()
    assert nc.discord.contents() == ["Hello there, this message grows."]
    assert nc.discord.embeds() == []


# -- empty answers ---------------------------------------------------------------------------


async def test_every_model_answering_nothing_tells_a_mention_so(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    llm_server.script(answer(""), answer(""))
    nc.say(f"{nc.mention()} hello?")
    await nc.settled()
    assert len(llm_server.requests) == 2  # the fallback was tried
    assert llm_server.requests[1].body["model"] == "fallback-model"
    assert nc.discord.contents() == []
    assert nc.discord.embeds() == ["Empty Response"]
    counts = await nc.chat.runtime.metrics.counts()
    assert counts[("empty_response", "openai:primary-model")] == 1
    assert counts[("empty_response", "openai:fallback-model")] == 1


async def test_every_model_answering_nothing_in_an_auto_reply_channel_stays_silent(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot(channels=frozenset({CHANNEL_ID}))
    llm_server.script(answer(""), answer(""))
    nc.say("no mention, just chatting in an auto-reply channel")
    await nc.settled()
    assert len(llm_server.requests) == 2
    assert nc.discord.messages[CHANNEL_ID][-1]["author"]["id"] != str(nc.bot.user.id)
    assert nc.discord.embeds() == []


async def test_an_empty_primary_answer_falls_back(open_bot: Any, llm_server: LLMServer) -> None:
    nc = await open_bot()
    llm_server.script(answer(""), answer("Fallback here."))
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["Fallback here."]
    assert nc.discord.embeds() == ["Fallback Model Used"]
    assert "without repeating" not in json.dumps(sent_messages(llm_server, 1))  # nothing shown
