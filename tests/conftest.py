from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

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
