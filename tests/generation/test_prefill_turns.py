"""A server's prefill through a whole turn (nextcord, the real OpenAI provider, the local LLM
server): across a tool call, and across a fallback, the answer begins with it exactly once,
and each model is sent it as its entry allows."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import settings_for
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import GUILD_ID, NextcordBot, OpenNextcord
from tests.support.scripts import answer, stalled_after, tool_call
from tomori.config.models import ModelChain
from tomori.config.scope import Scope
from tomori.policy.overrides import Overrides

YAWNS = "Tomori: *yawns*"
FAST = {"stream_first_token_timeout_ms": 1000, "stream_sdk_call_timeout_ms": 300}
"""A stall caught in 300 ms of silence mid-answer; a first token given a second, which a
fallback answering at once takes well within even on a busy machine (at 300 ms, a fallback's
first token came late under load and the turn ended with no answer)."""


async def started(
    open_nextcord: OpenNextcord, llm: LLMServer, tmp_path: Path, models: str
) -> NextcordBot:
    """A bot whose server's admins set the prefill (as `/tomori prefill set` stores it)."""
    chain = ModelChain.from_env(
        {
            "TOMORI_MODELS": models,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": f"{llm.base_url}/v1",
        }
    )
    nc = await open_nextcord(settings_for(tmp_path, **FAST), chain)
    await nc.chat.ensure_started()
    store = nc.chat.config.store
    assert store is not None
    await store.set(Scope.SERVER, str(GUILD_ID), "", Overrides(prefill=YAWNS))
    return nc


def sent(llm: LLMServer, request: int) -> list[dict[str, Any]]:
    return llm.requests[request].body["messages"]  # type: ignore[no-any-return]


async def test_text_before_a_tool_call_begins_with_it_and_the_next_pass_goes_on_without_it(
    open_nextcord: OpenNextcord, llm_server: LLMServer, tmp_path: Path
) -> None:
    nc = await started(open_nextcord, llm_server, tmp_path, "openai:test-model")
    llm_server.script(
        tool_call("current_time", '{"timezone": "UTC"}', text=" Let me check.\n\n"),
        answer("It is noon."),
    )
    nc.say(f"{nc.mention()} time?")
    await nc.settled()
    assert nc.discord.contents() == [f"{YAWNS} Let me check.", "It is noon."]
    assert sent(llm_server, 0)[-1] == {"role": "assistant", "content": YAWNS}
    follow_up = sent(llm_server, 1)
    assert follow_up[-2]["content"] == f"{YAWNS} Let me check.\n\n"  # once: what was shown
    assert not any(m["role"] == "assistant" and m["content"] == YAWNS for m in follow_up)


async def test_a_tool_called_first_carries_the_prefill_into_its_exchange(
    open_nextcord: OpenNextcord, llm_server: LLMServer, tmp_path: Path
) -> None:
    nc = await started(open_nextcord, llm_server, tmp_path, "openai:test-model")
    llm_server.script(tool_call("current_time", '{"timezone": "UTC"}'), answer(" It is noon."))
    nc.say(f"{nc.mention()} time?")
    await nc.settled()
    assert nc.discord.contents() == [f"{YAWNS} It is noon."]
    follow_up = sent(llm_server, 1)
    assert follow_up[-2]["content"] == YAWNS  # folded: never a second assistant turn in a row
    assert follow_up[-2]["tool_calls"][0]["function"]["name"] == "current_time"


async def test_a_fallback_goes_on_from_the_shown_text_without_the_prefill_again(
    open_nextcord: OpenNextcord, llm_server: LLMServer, tmp_path: Path
) -> None:
    nc = await started(open_nextcord, llm_server, tmp_path, "openai:primary,openai:fallback")
    llm_server.script(stalled_after(f"{YAWNS} The first half,\n\n"), answer("and the rest."))
    nc.say(f"{nc.mention()} go")
    await nc.settled()
    assert nc.discord.contents() == [f"{YAWNS} The first half,", "and the rest."]
    continued = sent(llm_server, 1)
    assert {"role": "assistant", "content": f"{YAWNS} The first half,\n\n"} in continued
    assert continued[-1]["role"] == "user"  # the continue notice: no prefill after it


async def test_each_model_of_the_chain_takes_the_prefill_its_own_way(
    open_nextcord: OpenNextcord,
    llm_server: LLMServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    models = "openai:primary,openai:fallback+noprefill"
    nc = await started(open_nextcord, llm_server, tmp_path, models)
    llm_server.script(stalled_after(""), answer("Plainly."))
    with caplog.at_level(logging.WARNING, logger="tomori.generation.chain"):
        nc.say(f"{nc.mention()} go")
        await nc.settled()
    assert sent(llm_server, 0)[-1] == {"role": "assistant", "content": YAWNS}
    assert sent(llm_server, 1)[-1]["role"] == "user"
    assert nc.discord.contents() == ["Plainly."]  # never told of it: posted as written
    assert "prefill is not sent to model openai:fallback" in caplog.text
