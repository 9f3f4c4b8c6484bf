"""A model's stream that ends wrong, through the cog: nothing lost, nothing false shown.

A stream that ends without saying it is done is a cut, as a dropped connection is; a word edit
mode shows in half when the stream stops is completed, and the fallback goes on after it; a
one-off failure before any text is asked again of the same model; a provider's refusal ends
the turn with its reason, and no other model is asked.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.gemini_wire import response, text_part
from tests.support.llm_server import LLMServer, Reply, drop, hold_until, sse, stall
from tests.support.openai_wire import chunk
from tests.support.scripts import answer, http_error, silent
from tomori.config.settings import Delivery


def said(provider: str, text: str) -> dict[str, Any]:
    """One event of `provider`'s stream carrying `text`, with no finish reason."""
    return chunk(text) if provider == "openai" else response(text_part(text))


async def shows(bot: ChatBot, text: str) -> None:
    """Wait until one of the bot's messages reads `text` (edits included)."""
    async with asyncio.timeout(20):
        while text not in await bot.contents():  # noqa: ASYNC110 (the bots' reads are async)
            await asyncio.sleep(0.005)


# -- a stream that ends with neither a finish reason nor [DONE] ------------------------------


@pytest.mark.parametrize("provider", ["openai", "gemini"])
async def test_a_stream_that_ends_without_saying_it_is_done_is_cut_and_the_fallback_goes_on(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, provider: str
) -> None:
    """A proxy that closes the stream politely: the body ends cleanly, but the provider never
    said the answer was complete. What it wrote may be any part of the answer: it is a cut."""
    models = f"{provider}:first,openai:second"
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server, models))
    written = "The answer begins here.\nAnd goes on"
    llm_server.script(Reply(body=[sse(said(provider, written))]), answer("And goes on to its end."))
    await bot.say(f"{bot.mention()} tell me")
    await bot.settled()
    assert await bot.contents() == ["The answer begins here.", "And goes on to its end."]
    assert await bot.embeds() == ["Fallback Model Used"]
    continued = llm_server.requests[1].body["messages"]
    assert continued[-2] == {"role": "assistant", "content": "The answer begins here.\n"}


# -- a word edit mode shows in half when the stream stops -------------------------------------


@pytest.mark.parametrize("ending", ["drop", "stall"])
async def test_a_word_edit_mode_shows_in_half_is_completed_and_the_fallback_goes_on_after_it(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, ending: str
) -> None:
    settings = settings_for(
        tmp_path,
        delivery=Delivery.EDIT,
        stream_edit_interval_ms=10,
        stream_abandoned_settle_timeout_ms=5_000,
    )
    bot = await open_bot(settings, chain_for(llm_server, "openai:first,openai:second"))
    shown = asyncio.Event()
    llm_server.script(
        Reply(
            body=[
                sse(chunk("We walked through")),
                hold_until(shown),
                drop() if ending == "drop" else stall(),
            ]
        ),
        answer("the door."),
    )
    await bot.say(f"{bot.mention()} where?")
    await shows(bot, "We walked throug")  # its "h" held back: "http" might have followed
    shown.set()
    await bot.settled()
    assert await bot.contents() == ["We walked through", "the door."]
    continued = llm_server.requests[1].body["messages"]
    assert continued[-2] == {"role": "assistant", "content": "We walked through"}


# -- a one-off failure before any text is shown --------------------------------------------


ONE_OFFS = {
    "500": http_error(500),
    "503": http_error(503),
    "reset": Reply(reset=True),
}


@pytest.mark.parametrize("fault", ONE_OFFS)
@pytest.mark.parametrize("models", ["openai:only", "openai:first,openai:second"])
async def test_a_one_off_failure_before_any_text_is_asked_again_of_the_same_model(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, fault: str, models: str
) -> None:
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server, models))
    primary = models.split(",")[0].split(":")[1]
    llm_server.script(ONE_OFFS[fault], answer("Answered at the second try."))
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    assert await bot.contents() == ["Answered at the second try."]
    assert await bot.embeds() == []  # no error, no fallback
    # and the model is not sidelined: the next turn asks it first again
    llm_server.script(answer("Still the first."))
    await bot.say(f"{bot.mention()} again")
    await bot.settled()
    assert [request.body["model"] for request in llm_server.requests] == [primary] * 3


async def test_the_second_try_waits_only_what_is_left_of_the_first_token_budget(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot
) -> None:
    """A failure late in the budget leaves the second try only the rest of it: the fallback
    answers as soon as it would had the model stalled from the start (2 s here)."""
    bot = await open_bot(
        settings_for(tmp_path), chain_for(llm_server, "openai:first,openai:second")
    )
    llm_server.script(
        Reply(status=500, json_body={"error": {"message": "late"}}, header_delay=1.8),
        silent(),
        answer("The fallback answered."),
    )
    started = time.monotonic()
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    assert await bot.contents() == ["The fallback answered."]
    assert [request.body["model"] for request in llm_server.requests] == [
        "first",
        "first",
        "second",
    ]
    assert time.monotonic() - started < 3.0  # not 1.8 s + a whole 2 s budget again


# -- a provider's refusal -------------------------------------------------------------------


AZURE_FILTER = Reply(
    status=400,
    json_body={
        "error": {
            "code": "content_filter",
            "message": (
                "The response was filtered due to the prompt triggering Azure OpenAI's content "
                "management policy. Please modify your prompt and retry. To learn more about our "
                "content filtering policies please read our documentation: "
                "https://go.microsoft.com/fwlink/?linkid=2198766"
            ),
            "param": "prompt",
            "status": 400,
        }
    },
)
GEMINI_BLOCK = Reply(body=[sse(response(block_reason="SAFETY"))])
FILTERED_MID_ANSWER = Reply(
    body=[
        sse(chunk("Here is a first line.\nAnd then")),
        sse(chunk(finish="content_filter")),
        sse("[DONE]"),
    ]
)
REFUSALS = {
    "openai-400": ("openai", AZURE_FILTER, [], "Azure OpenAI's content management policy."),
    "gemini-blocked": ("gemini", GEMINI_BLOCK, [], "SAFETY"),
    "openai-filtered-mid-answer": (
        "openai",
        FILTERED_MID_ANSWER,
        ["Here is a first line."],
        "content_filter",
    ),
}


@pytest.mark.parametrize("case", REFUSALS)
async def test_a_providers_refusal_ends_the_turn_with_its_reason_and_asks_no_other_model(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, case: str
) -> None:
    provider, refusal, kept, reason = REFUSALS[case]
    models = f"{provider}:first,openai:second"
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server, models))
    llm_server.script(refusal, answer("What the first refused."))
    await bot.say(f"{bot.mention()} something the filter refuses")
    await bot.settled()
    assert len(llm_server.requests) == 1  # the fallback was never asked
    assert await bot.contents() == kept
    [notice] = [embed for message in await bot.messages() for embed in message.embeds]
    assert notice["title"] == "Refused by the Provider"
    assert notice["description"].endswith(reason)
    assert "http" not in notice["description"]
