"""What the attachment tests of both libraries share: the file server standing in for
Discord's CDN, a discord.py bot opener, and readers of what the model was sent.

`files` and `open_dpy` are fixtures; tests/conftest.py makes them every test's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.dpy import DpyBot, start_dpy_bot, stop_dpy_bot
from tests.support.files import FileServer
from tests.support.llm_server import LLMServer
from tomori.config.settings import Settings

SEEING = "openai:test-model+vision"
"""A model the cog sends images to."""

OpenDpy = Callable[..., Awaitable[DpyBot]]


@pytest.fixture
async def files() -> AsyncIterator[FileServer]:
    server = FileServer()
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def open_dpy(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenDpy]:
    """Starts discord.py bots with the cog (a model that sees images, unless `models` says
    otherwise); each is stopped when the test ends."""
    bots: list[DpyBot] = []

    async def start(settings: Settings | None = None, models: str = SEEING) -> DpyBot:
        harness = await start_dpy_bot(
            settings or settings_for(tmp_path), chain_for(llm_server, models), monkeypatch
        )
        bots.append(harness)
        return harness

    yield start
    for harness in bots:
        await stop_dpy_bot(harness)


def last_user_content(request_number: int, llm_server: LLMServer) -> Any:
    messages = llm_server.requests[request_number].body["messages"]
    return [m for m in messages if m["role"] == "user"][-1]["content"]


def user_texts(request_number: int, llm_server: LLMServer) -> list[str]:
    """Every user message's text, its text parts included, in the order sent."""
    texts = []
    for message in llm_server.requests[request_number].body["messages"]:
        content = message["content"]
        if message["role"] != "user":
            continue
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [part["text"] for part in content if part["type"] == "text"]
    return texts


def images_sent(request_number: int, llm_server: LLMServer) -> list[str]:
    return [
        part["image_url"]["url"]
        for message in llm_server.requests[request_number].body["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] == "image_url"
    ]
