"""A model's stream that ends wrong, through the cog: nothing lost, nothing false shown.

A stream that ends without saying it is done is a cut, as a dropped connection is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.bots import OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.gemini_wire import response, text_part
from tests.support.llm_server import LLMServer, Reply, sse
from tests.support.openai_wire import chunk
from tests.support.scripts import answer


def said(provider: str, text: str) -> dict[str, Any]:
    """One event of `provider`'s stream carrying `text`, with no finish reason."""
    return chunk(text) if provider == "openai" else response(text_part(text))


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
