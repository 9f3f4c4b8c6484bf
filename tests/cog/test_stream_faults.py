"""A model's stream that ends wrong, through the cog: nothing lost, nothing false shown.

A stream that ends without saying it is done is a cut, as a dropped connection is; a word edit
mode shows in half when the stream stops is completed, and the fallback goes on after it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.gemini_wire import response, text_part
from tests.support.llm_server import LLMServer, Reply, drop, hold_until, sse, stall
from tests.support.openai_wire import chunk
from tests.support.scripts import answer
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
