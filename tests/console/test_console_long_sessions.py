"""A console session longer than its window, as a channel's: what the model remembered is shown
after the window moved past it, what fell out is folded in the background into the channel's
summary a later turn is shown, and a 2,000-token model is sent each request within its
context, the system prompt (a persona's), the notes and the line typed kept (a session in this
process, input piped)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sqlite3
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.console_process import bot_environment
from tests.support.llm_server import LLMServer, Reply, SeenRequest
from tests.support.scripts import answer, counted_answer, tool_call
from tests.support.waiting import until
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.console.session import ConsoleSession
from tomori.summary.folding import INSTRUCTION, NOTE_HEADER

LINE = "a long line about the harbour, its boats and the people who sail them " * 10
"""About 160 tokens, however counted: ten of them overflow a 2,000-token model."""


def summarizing(request: SeenRequest) -> bool:
    """Whether the request is a summary's fold (its instruction), not a turn's."""
    return INSTRUCTION in json.dumps(request.body.get("messages", []))


def folded(request: SeenRequest) -> Reply:
    """The summarizing model's answer: the summary so far, then the start of each line it was
    given to take in (a fold keeps what the summary held, as a model asked to is told to)."""
    (asked,) = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
    before = asked.split("Summary so far:\n", 1)[1].split("\n\nMessages to take in", 1)[0]
    lines = asked.split("oldest first:\n", 1)[1].splitlines()
    new = " / ".join(line[:12] for line in lines)
    return answer(
        f"{before} / {new}" if before != "(none yet)" else f"Earlier the user said: {new}"
    )


def turns(server: LLMServer) -> list[str]:
    """Each turn's request (no fold's), as one text."""
    return [json.dumps(r.body["messages"]) for r in server.requests if not summarizing(r)]


@dataclass
class Session:
    """A piped console session in this process, its input written line by line."""

    writing: int
    folder: Path
    """Where its temporary folder (and so its own database) is."""

    def type(self, *lines: str) -> None:
        os.write(self.writing, "".join(f"{line}\n" for line in lines).encode())

    def rows(self, table: str) -> int:
        """How many rows `table` of the session's own database holds (none before it is
        opened and migrated)."""
        stores = list(self.folder.glob("tomori-console-*/console.db"))
        if not stores:
            return 0
        with contextlib.closing(sqlite3.connect(stores[0])) as reader:
            try:
                return int(reader.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
            except sqlite3.OperationalError:  # not migrated yet
                return 0


@contextlib.asynccontextmanager
async def session(
    server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **variables: str
) -> AsyncIterator[Session]:
    """A session on `server`; once the block ends, its input ends and it exits."""
    folder = tmp_path / "temporary"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    env = bot_environment(server, tmp_path, **variables)
    reading, writing = os.pipe()
    out = io.StringIO()
    console = ConsoleSession(
        Settings.from_env(env), ModelChain.from_env(env), out, live=False, fd=reading
    )
    running = asyncio.create_task(console.run())
    try:
        yield Session(writing, folder)
    finally:
        os.close(writing)
        try:
            async with asyncio.timeout(60):
                assert await running == 0
        finally:
            os.close(reading)


async def test_a_fact_remembered_is_shown_after_the_window_moved_past_it(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember = json.dumps({"text": "The user's cat is called Mochi"})
    llm_server.script(tool_call("remember", remember), answer("Noted."))
    llm_server.script(*(answer(f"Sure {n}.") for n in range(4)), answer("Mochi."))
    async with session(
        llm_server, tmp_path, monkeypatch, TOMORI_HISTORY_LIMIT="3", TOMORI_SUMMARIES="0"
    ) as console:
        console.type("my cat is called Mochi, remember it")
        console.type(*(f"chatter {n}" for n in range(4)))
        console.type("what is my cat called?")
    asked = turns(llm_server)[-1]
    assert "user: what is my cat called?" in asked
    assert "my cat is called Mochi, remember it" not in asked  # out of the window
    assert "The user's cat is called Mochi" in asked  # remembered


async def test_what_fell_out_of_a_long_sessions_window_is_summarized_for_a_later_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = LLMServer(lambda r: folded(r) if summarizing(r) else answer("Sure."))
    await model.start()
    try:
        async with session(model, tmp_path, monkeypatch, TOMORI_HISTORY_LIMIT="3") as console:
            # Five lines: the fifth has four messages before it, one more than its window,
            # however the answers interleave (typed all before the first answer, the fourth's
            # window held all three before it, and nothing fell out: no fold was asked).
            console.type(*(f"fact {n}: the harbour" for n in range(5)))
            await until(lambda: console.rows("channel_summaries") == 1, within=30)
            console.type("what did I say first?")
            await until(lambda: "what did I say first?" in "".join(turns(model)), within=30)
    finally:
        await model.close()
    asked = turns(model)[-1]
    assert NOTE_HEADER in asked  # the summary's note, before the history
    assert "Earlier the user said: user: fact 0" in asked
    assert "user: fact 0: the harbour" not in asked  # the line itself fell out


async def test_a_small_model_gets_each_request_within_its_context_with_the_persona_and_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fourteen long lines to a persona on a 2,000-token model, a window of twenty messages
    (ten lines would overflow it), with a memory and the channel's summary: each request
    fits, the persona's prompt first, the line typed last, the memory and (once folded) the
    summary in it."""
    answering = counted_answer("Noted.")
    model = LLMServer(lambda r: folded(r) if summarizing(r) else answering(r), context_tokens=2_000)
    await model.start()
    remember = json.dumps({"text": "The user sails a boat called Kestrel"})
    model.script(tool_call("remember", remember), answer("I will remember."))
    try:
        async with session(
            model,
            tmp_path,
            monkeypatch,
            TOMORI_MODELS="openai:test-model+context=2000",
            TOMORI_HISTORY_LIMIT="20",
        ) as console:
            console.type("/tomori persona add Aria prompt:You are Aria, a sailor's bard.")
            console.type("aria, my boat is called Kestrel: remember it")
            console.type(*(f"aria ({n}) {LINE}" for n in range(14)))
            await until(lambda: console.rows("channel_summaries") == 1, within=30)
            console.type("aria, what is my boat called?")
            await until(lambda: "what is my boat called?" in "".join(turns(model)), within=30)
    finally:
        await model.close()
    asked = [r for r in model.requests if not summarizing(r)]
    assert len(asked) == 17  # each line once (the first twice: its remember), none refused
    assert max(model.counted) <= 2_000
    last = asked[-1].body["messages"]
    assert last[0] == {"role": "system", "content": "You are Aria, a sailor's bard."}
    sent = json.dumps(last)
    assert "user: aria, what is my boat called?" in sent
    assert "The user sails a boat called Kestrel" in sent  # the memory
    assert NOTE_HEADER in sent  # the summary
    assert "aria (0) " not in sent  # the oldest lines fell out
