"""Rehearsing a cast in the console: `/tomori persona add`, then messages that name personas,
each answer printed under its persona's name (a session in this process, input piped)."""

from __future__ import annotations

import asyncio
import io
import os
import re
from pathlib import Path

from tests.support.console_process import bot_environment
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.console.session import ConsoleSession


async def piped(llm_server: LLMServer, tmp_path: Path, typed: str) -> str:
    """What a piped session prints for `typed`, once its input ends."""
    env = bot_environment(llm_server, tmp_path)
    reading, writing = os.pipe()
    os.write(writing, typed.encode())
    os.close(writing)
    out = io.StringIO()
    try:
        session = ConsoleSession(
            Settings.from_env(env), ModelChain.from_env(env), out, live=False, fd=reading
        )
        async with asyncio.timeout(15):
            assert await session.run() == 0
    finally:
        os.close(reading)
    return out.getvalue()


async def test_personas_added_in_the_console_answer_under_their_names_each_seeing_the_last(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Plain bot."), answer("Aria sings."), answer("Bex claps."))
    typed = (
        "hello\n"
        "/tomori persona add Aria prompt:You are Aria, a bard.\n"
        "/tomori persona add Bex prompt:You are Bex. triggers:bex, drummer\n"
        "aria, then the drummer: play\n"
        "/tomori persona list\n"
    )
    out = await piped(llm_server, tmp_path, typed)
    assert "[tomori #2]\nPlain bot.\n" in out
    assert "Aria joined this server." in out
    assert (
        "[you #3] aria, then the drummer: play\n[Aria #4]\nAria sings.\n[Bex #5]\nBex claps.\n"
        in out
    )
    assert "**Bex**: called by bex, drummer" in out
    aria, bex = (request.body["messages"] for request in llm_server.requests[1:])
    assert aria[0] == {"role": "system", "content": "You are Aria, a bard."}
    assert "tomori: Plain bot." in aria[-1]["content"]  # the bot is another speaker to Aria
    assert bex[0]["content"] == "You are Bex."
    assert "\nAria: Aria sings.\n" in bex[-1]["content"]  # Bex sees what Aria said


async def test_a_sprite_added_in_the_console_prints_its_lines_under_its_name(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(
        answer("Hello.\nAria (happy): Hooray!\nAria (cross): stays as text."), answer("Yes.")
    )
    typed = (
        "/tomori persona add Aria prompt:You are Aria.\n"
        "/tomori sprite add Aria label:happy avatar:https://images.example/happy.png\n"
        "hi aria\n"
        "again, aria\n"
    )
    out = await piped(llm_server, tmp_path, typed)
    assert 'Aria can now show sprite "happy"' in out
    assert re.search(
        r"\[Aria #\d+\]\nHello.\n\[Aria \(happy\) #\d+\]\nHooray!\nAria \(cross\)", out
    )
    system = llm_server.requests[0].body["messages"][0]["content"]
    assert system.startswith("You are Aria.\n\nYou have alternate avatars")
    later = llm_server.requests[1].body["messages"]
    assert any(m["role"] == "assistant" and "Aria (happy): Hooray!" in m["content"] for m in later)
