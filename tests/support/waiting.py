"""Waiting, in a test, for a state it can see."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], bool], within: float = 20.0) -> None:
    """Wait for a state the test can see; the budget only bounds a broken run."""
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.005)
