"""The context budget in the console, as in a channel: a long session with a small model sends
each request within its context, the system prompt and the line typed always in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.console_process import bot_environment, finished, start_bot
from tests.support.llm_server import LLMServer
from tests.support.scripts import counted_answer
from tomori.config.settings import DEFAULT_SYSTEM_PROMPT

pytestmark = pytest.mark.slow  # bot.py --console run as a process

LINE = "a long line about the harbour, its boats and the people who sail them " * 10
"""About 160 tokens, however counted: fifteen of them, and their answers, overflow 2,000 (the
console paces its answers as Discord would, about one a second: fewer lines, a shorter test)."""
LINES = 15


async def test_a_long_session_with_a_small_model_fits_each_request_and_keeps_the_line_typed(
    tmp_path: Path,
) -> None:
    model = LLMServer(default=counted_answer("Noted."), context_tokens=2_000)
    await model.start()
    try:
        env = bot_environment(
            model,
            tmp_path,
            TOMORI_MODELS="openai:test-model+context=2000",
            TOMORI_HISTORY_LIMIT="100",
        )
        process = await start_bot("--console", env=env)
        typed = "".join(f"({n}) {LINE}\n" for n in range(LINES))
        out, err = await finished(process, typed.encode(), within_s=60)
    finally:
        await model.close()
    assert process.returncode == 0, err
    assert out.count("Noted.") == LINES  # every line answered at the first ask
    assert len(model.requests) == LINES
    assert max(model.counted) <= 2_000
    last = model.requests[-1].body["messages"]
    assert last[0] == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
    assert last[-1]["content"] == f"user: ({LINES - 1}) {LINE}".rstrip()
    assert not any("(0) " in str(message["content"]) for message in last)
