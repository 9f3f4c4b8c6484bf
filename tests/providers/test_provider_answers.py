"""Provider answers that used to end in silence or in the wrong outcome, through the cog.

A 200 with no stream events, bytes that are not UTF-8, a base URL that can never work, and a
model that refuses tools: each ends in the fallback's answer or the "Generation Error" notice,
or stops start-up, and the operator's log carries the provider's own words without secrets.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import settings_for
from tests.support.command import run
from tests.support.gemini_wire import response, text_part
from tests.support.llm_server import LLMServer, Reply, raw, raw_bytes, sse, stall
from tests.support.nextcord_fake import CHANNEL_ID, NextcordBot, OpenNextcord
from tests.support.openai_wire import chunk
from tests.support.scripts import answer
from tomori.config.models import ModelChain
from tomori.config.settings import BUILTIN_TOOLS, ConfigError, Settings
from tomori.providers.base import JsonObject
from tomori.tools.registry import Tool, ToolContext

KEY = "sk-very-secret-key"
FAST = {"stream_first_token_timeout_ms": 2_000, "stream_sdk_call_timeout_ms": 2_000}
LOGIN_PAGE = Reply(
    content_type="text/html; charset=utf-8",
    body=[raw("<!doctype html>\n<html><body><form>Sign in to the proxy</form></body></html>\n")],
)
A_COMPLETION = Reply(
    json_body={
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "All at once."},
                "finish_reason": "stop",
            }
        ],
    }
)
BAD_BYTES = raw_bytes(b'data: {"choices": [{"delta": {"content": "\xff\xfe"}}]}\n\n')


def chain_of(server: LLMServer, models: str, **extra: str) -> ModelChain:
    return ModelChain.from_env(
        {
            "TOMORI_MODELS": models,
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": f"{server.base_url}/v1",
            "GEMINI_API_KEY": KEY,
            "GEMINI_BASE_URL": server.base_url,
            **extra,
        }
    )


@pytest.fixture
def open_bot(tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord) -> Any:
    async def start(
        models: str = "openai:primary,openai:fallback",
        extra: Mapping[str, str] | None = None,
        **overrides: object,
    ) -> NextcordBot:
        settings = settings_for(tmp_path, **{**FAST, **overrides})
        return await open_nextcord(settings, chain_of(llm_server, models, **(extra or {})))

    return start


# -- item 8: a 200 that holds no stream events ----------------------------------------------


@pytest.mark.parametrize(
    ("primary", "reply"),
    [("openai", LOGIN_PAGE), ("openai", A_COMPLETION), ("gemini", A_COMPLETION)],
    ids=["openai-login-page", "openai-stream-ignored", "gemini-another-format"],
)
async def test_a_200_without_stream_events_falls_back(
    open_bot: Any, llm_server: LLMServer, primary: str, reply: Reply
) -> None:
    nc = await open_bot(models=f"{primary}:primary,openai:fallback")
    llm_server.script(reply, answer("The fallback answers."))
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    assert nc.discord.contents() == ["The fallback answers."]
    assert nc.discord.embeds() == ["Fallback Model Used"]


async def test_a_200_without_stream_events_from_the_only_model_posts_the_error_notice(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot(models="openai:only")
    llm_server.script(LOGIN_PAGE)
    with caplog.at_level(logging.WARNING, logger="tomori.generation.chain"):
        nc.say(f"{nc.mention()} hello")
        await nc.settled()
    assert nc.discord.contents() == []
    assert nc.discord.embeds() == ["Generation Error"]
    assert "no stream events (Content-Type: text/html" in caplog.text


# -- item 9: bytes that are not UTF-8 in the middle of a stream ---------------------------------


async def test_invalid_utf8_mid_stream_keeps_the_lines_before_it_and_falls_back(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot()
    # No paragraph break: the text is still in the writer's buffer when the bad bytes come.
    llm_server.script(
        Reply(body=[sse(chunk("Before the bad bytes.\nAnd a line cut")), BAD_BYTES, stall()]),
        answer("And after them."),
    )
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    assert nc.discord.contents() == ["Before the bad bytes.", "And after them."]
    assert nc.discord.embeds() == ["Fallback Model Used"]
    continued = llm_server.requests[1].body["messages"]
    assert {"role": "assistant", "content": "Before the bad bytes.\n"} in continued


@pytest.mark.parametrize("provider", ["openai", "gemini"])
async def test_invalid_utf8_from_the_only_model_keeps_the_lines_and_posts_the_error_notice(
    open_bot: Any, llm_server: LLMServer, provider: str
) -> None:
    nc = await open_bot(models=f"{provider}:only")
    written = "Before the bad bytes.\nAnd a line cut"
    first = chunk(written) if provider == "openai" else response(text_part(written))
    llm_server.script(Reply(body=[sse(first), BAD_BYTES, stall()]))
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    assert nc.discord.contents() == ["Before the bad bytes."]
    assert nc.discord.embeds() == ["Generation Error"]


# -- items 12 and 19: base URLs that can never work stop start-up ---------------------------


@pytest.mark.parametrize(
    ("variable", "url", "allowed"),
    [
        ("OPENAI_BASE_URL", "http://admin:hunter2@proxy.example/v1", "Authorization header"),
        ("OPENAI_BASE_URL", "http://localhost:99999/v1", "port must be a number from 1 to 65535"),
        ("GEMINI_BASE_URL", "http://admin:hunter2@proxy:123456", "port must be a number"),
    ],
    ids=["openai-credentials", "openai-port", "gemini-port"],
)
def test_a_base_url_that_cannot_work_stops_the_bot_in_one_line(
    variable: str, url: str, allowed: str
) -> None:
    provider = variable.split("_")[0].lower()
    result = run(
        DISCORD_TOKEN="x",
        TOMORI_MODELS=f"{provider}:m",
        **{f"{variable.split('_')[0]}_API_KEY": "k", variable: url},
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert f"{variable}=" in result.stderr
    assert allowed in result.stderr
    assert "hunter2" not in result.stderr
    assert "Traceback" not in result.stderr


async def test_gemini_behind_an_authenticating_proxy_answers_with_basic_auth_and_its_key(
    open_bot: Any, llm_server: LLMServer
) -> None:
    proxied = f"http://tomori:hunter2@127.0.0.1:{llm_server.port}"
    nc = await open_bot(models="gemini:m", extra={"GEMINI_BASE_URL": proxied})
    llm_server.script(Reply(body=[sse(response(text_part("Through the proxy."), finish="STOP"))]))
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    assert nc.discord.contents() == ["Through the proxy."]
    headers = llm_server.requests[0].headers
    assert headers["authorization"] == "Basic " + base64.b64encode(b"tomori:hunter2").decode()
    assert headers["x-goog-api-key"] == KEY


# -- item 13: TOMORI_TOOLS, and the provider's own words in the log -------------------------


def test_tomori_tools_picks_built_in_tools_by_name() -> None:
    assert Settings().tools == frozenset(BUILTIN_TOOLS)
    assert Settings.from_env({"TOMORI_TOOLS": ""}).tools == frozenset()
    assert Settings.from_env({"TOMORI_TOOLS": " Current_Time , "}).tools == {"current_time"}
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"TOMORI_TOOLS": "current_time,web_search"})
    message = str(raised.value)
    assert message.startswith("TOMORI_TOOLS='current_time,web_search' is not allowed")
    assert "current_time, read_message" in message


async def test_by_default_every_built_in_tool_is_offered(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot(models="openai:m")
    llm_server.script(answer("Tools offered."))
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    offered = [tool["function"]["name"] for tool in llm_server.requests[0].body["tools"]]
    assert offered == list(BUILTIN_TOOLS)


async def test_with_tomori_tools_empty_no_tools_field_is_sent(
    open_bot: Any, llm_server: LLMServer
) -> None:
    nc = await open_bot(models="openai:llama3", tools=frozenset())
    llm_server.script(answer("Hi without tools."))
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    assert nc.discord.contents() == ["Hi without tools."]
    assert "tools" not in llm_server.requests[0].body


async def test_tomori_tools_keeps_the_named_tools_and_those_a_bot_registers(
    open_bot: Any, llm_server: LLMServer
) -> None:
    async def roll(context: ToolContext, arguments: Mapping[str, Any]) -> JsonObject:
        return {"rolled": 4}

    nc = await open_bot(models="openai:m", tools=frozenset({"current_time"}))
    nc.bot.get_cog("Tomori").register_tool(Tool("roll_die", "Roll a die.", {}, roll))
    llm_server.script(answer("Tools offered."))
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    offered = [tool["function"]["name"] for tool in llm_server.requests[0].body["tools"]]
    assert offered == ["current_time", "roll_die"]


async def test_a_model_refusing_tools_logs_its_own_words_without_the_key(
    open_bot: Any, llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    nc = await open_bot(models="openai:gemma:2b")
    said = f"registry.ollama.ai/library/gemma:2b does not support tools (key {KEY})"
    llm_server.script(Reply(status=400, json_body={"error": {"message": said, "type": "api"}}))
    with caplog.at_level(logging.WARNING, logger="tomori.generation.chain"):
        nc.say(f"{nc.mention()} hello")
        await nc.settled()
    assert nc.discord.embeds() == ["Generation Error"]
    shown = json.dumps(nc.discord.messages[CHANNEL_ID])
    assert "does not support tools" not in shown  # users see only our own notice
    [line] = [r.getMessage() for r in caplog.records if "gemma:2b ended with" in r.getMessage()]
    assert "HTTP 400" in line
    assert "registry.ollama.ai/library/gemma:2b does not support tools (key ***)" in line
    assert KEY not in caplog.text


# -- only the base URL and key the chain holds are used ---------------------------------------


@pytest.mark.parametrize(
    "process_env",
    [
        {"OPENAI_BASE_URL": "{server}/v1"},
        {"OPENAI_BASE_URL": "http://admin:hunter2@127.0.0.1:{port}/v1"},
    ],
    ids=["another-server", "unchecked-credentials"],
)
async def test_a_chain_without_a_base_url_never_takes_the_process_environments(
    open_nextcord: OpenNextcord,
    llm_server: LLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    process_env: dict[str, str],
) -> None:
    """A chain configured in code without OPENAI_BASE_URL talks to OpenAI's own API, whatever
    the process's OPENAI_BASE_URL holds: here the primary cannot reach it (no key of OpenAI's,
    maybe no network) and the fallback answers, and the server the environment named (the
    test's own) hears only the fallback's request."""
    for name, value in process_env.items():
        url = value.format(server=llm_server.base_url, port=llm_server.port)
        monkeypatch.setenv(name, url)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_API_KEY", "another-key")
    chain = ModelChain.from_env(
        {
            "TOMORI_MODELS": "openai:primary,gemini:fallback",
            "OPENAI_API_KEY": KEY,
            "GEMINI_API_KEY": KEY,
            "GEMINI_BASE_URL": llm_server.base_url,
        }
    )
    nc = await open_nextcord(settings_for(tmp_path, **FAST), chain)
    llm_server.script(
        Reply(body=[sse(response(text_part("The fallback answers."), finish="STOP"))])
    )
    nc.say(f"{nc.mention()} hello")
    await nc.settled()
    assert nc.discord.contents() == ["The fallback answers."]
    assert nc.discord.embeds() == ["Fallback Model Used"]
    assert [request.path.split("/models/")[-1] for request in llm_server.requests] == [
        "fallback:streamGenerateContent?alt=sse"
    ]
    assert llm_server.requests[0].headers["x-goog-api-key"] == KEY
