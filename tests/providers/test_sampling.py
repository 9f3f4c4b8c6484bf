"""TOMORI_MAX_OUTPUT_TOKENS and TOMORI_TEMPERATURE reach each provider in its own parameter
names, as the local LLM server reads them off the request; unset, nothing is sent and the
provider's default holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import settings_for
from tests.support.gemini_wire import response, text_part
from tests.support.llm_server import LLMServer, Reply, sse
from tests.support.nextcord_fake import OpenNextcord
from tests.support.scripts import answer
from tomori.config.models import ModelChain
from tomori.providers.openai import max_tokens_parameter


def chain(server: LLMServer, models: str) -> ModelChain:
    return ModelChain.from_env(
        {
            "TOMORI_MODELS": models,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": f"{server.base_url}/v1",
            "GEMINI_API_KEY": "gemini-test-key",
            "GEMINI_BASE_URL": server.base_url,
        }
    )


def gemini_answer(text: str) -> Reply:
    return Reply(body=[sse(response(text_part(text), finish="STOP", usage=(5, 1)))])


def openai_sampling(body: dict[str, Any]) -> dict[str, Any]:
    keys = ("max_tokens", "max_completion_tokens", "temperature")
    return {key: body[key] for key in keys if key in body}


def gemini_sampling(body: dict[str, Any]) -> dict[str, Any]:
    config = body.get("generationConfig") or {}
    return {key: config[key] for key in ("maxOutputTokens", "temperature") if key in config}


@pytest.mark.parametrize(
    ("models", "reply", "read", "expected"),
    [
        ("openai:m", answer("Hi."), openai_sampling, {"max_tokens": 321, "temperature": 0.3}),
        (
            "gemini:m",
            gemini_answer("Hi."),
            gemini_sampling,
            {"maxOutputTokens": 321, "temperature": 0.3},
        ),
    ],
    ids=["openai", "gemini"],
)
async def test_max_output_tokens_and_temperature_reach_the_provider(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    models: str,
    reply: Reply,
    read: Any,
    expected: dict[str, Any],
) -> None:
    settings = settings_for(tmp_path, max_output_tokens=321, temperature=0.3)
    nc = await open_nextcord(settings, chain(llm_server, models))
    llm_server.script(reply)
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["Hi."]
    assert read(llm_server.requests[0].body) == expected


@pytest.mark.parametrize(
    ("models", "reply", "read"),
    [
        ("openai:m", answer("Hi."), openai_sampling),
        ("gemini:m", gemini_answer("Hi."), gemini_sampling),
    ],
    ids=["openai", "gemini"],
)
async def test_unset_they_are_not_sent(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    models: str,
    reply: Reply,
    read: Any,
) -> None:
    nc = await open_nextcord(settings_for(tmp_path), chain(llm_server, models))
    llm_server.script(reply)
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == ["Hi."]
    assert read(llm_server.requests[0].body) == {}


@pytest.mark.parametrize(
    ("base_url", "name"),
    [
        ("https://api.openai.com/v1", "max_completion_tokens"),
        ("https://API.OpenAI.com/v1/", "max_completion_tokens"),
        ("https://openrouter.ai/api/v1", "max_tokens"),
        ("http://127.0.0.1:8000/v1", "max_tokens"),
        ("https://api.openai.com.example.net/v1", "max_tokens"),
    ],
)
def test_openai_itself_is_sent_the_ceiling_under_its_newer_name(base_url: str, name: str) -> None:
    assert max_tokens_parameter(base_url) == name
