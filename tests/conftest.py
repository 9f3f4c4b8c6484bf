from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.llm_server import LLMServer
from tests.support.passes import Harness
from tomori.store import Store


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "tomori.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(db_path)
    await opened.migrate()
    yield opened
    await opened.close()


@pytest.fixture
async def harness(db_path: Path) -> AsyncIterator[Harness]:
    """Runs `stream_once` passes inside real turns on a real database."""
    store = await Store.open(db_path)
    await store.migrate()
    yield Harness(store)
    await store.close()


@pytest.fixture
async def llm_server() -> AsyncIterator[LLMServer]:
    """A scriptable LLM HTTP server on 127.0.0.1 for the real SDKs to talk to."""
    server = LLMServer()
    await server.start()
    yield server
    await server.close()
