"""The console session on a pty in this process, its event loop held up on purpose."""

from __future__ import annotations

import asyncio
import os
import pty
import time
from pathlib import Path

import pytest

from tests.support.console_process import bot_environment
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer
from tests.support.waiting import until
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.console.session import ConsoleSession

pytestmark = pytest.mark.slow  # a whole console session, its database and a model server


def type_with_the_loop_held_up(terminal: int, reads: list[bytes], apart_s: float) -> None:
    """Type each read `apart_s` after the one before, the event loop blocked meanwhile (as a
    long step of an answer would block it): nothing typed is read on the loop until the end."""
    for keys in reads:
        os.write(terminal, keys)
        time.sleep(apart_s)


def shown(output: Path) -> str:
    return output.read_text()


async def test_two_lines_typed_apart_are_two_messages_though_the_loop_was_busy(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """An Enter and the next key, typed 150 ms apart while the loop was held up, both wait
    unread: they came apart, so the Enter sends (a paste's line breaks come at once)."""
    llm_server.script(answer("One."), answer("Two."))
    env = bot_environment(llm_server, tmp_path, TOMORI_FOLLOW_UPS="false")
    terminal, console_side = pty.openpty()
    output = tmp_path / "shown.txt"
    try:
        with output.open("w") as out:
            session = ConsoleSession(
                Settings.from_env(env), ModelChain.from_env(env), out, live=True, fd=console_side
            )
            running = asyncio.create_task(session.run())
            await until(lambda: "you #1> " in shown(output))
            type_with_the_loop_held_up(terminal, [b"one\r", b"two\r"], apart_s=0.15)
            await until(lambda: len(llm_server.requests) == 2 and "you #5> " in shown(output))
            os.write(terminal, b"\x04")
            async with asyncio.timeout(10):
                assert await running == 0
    finally:
        os.close(terminal)
        os.close(console_side)
    said = [request.body["messages"][-1]["content"] for request in llm_server.requests]
    assert said == ["user: one", "user: two"]
