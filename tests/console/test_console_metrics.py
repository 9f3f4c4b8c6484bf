"""`tomori --console` with TOMORI_METRICS_ADDR, as an operator tries metrics before deploying:
a turn typed in the console moves the counters a scrape of its `/metrics` reads (issue 38's
"done when"), and its `/readyz` is its database answering."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.console_process import (
    SECRET_KEY,
    bot_environment,
    finished,
    read_until,
    start_bot,
    type_line,
)
from tests.support.llm_server import LLMServer
from tests.support.scrapes import Scraped, leaks, probe, scrape
from tests.support.scripts import answer

SERVING = "note: serving /metrics at "


async def served_at(process: asyncio.subprocess.Process, within_s: float = 20) -> str:
    """The metrics URL the console says it serves on (its port chosen by the system)."""
    assert process.stderr is not None
    async with asyncio.timeout(within_s):
        while True:
            line = (await process.stderr.readline()).decode()
            assert line, "the console ended before it said where it serves its metrics"
            if line.startswith(SERVING):
                return line.removeprefix(SERVING).strip()


async def test_a_console_turn_moves_the_counters_its_metrics_endpoint_serves(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("The lighthouse keeper waves."))
    env = bot_environment(llm_server, tmp_path, TOMORI_METRICS_ADDR="127.0.0.1:0")
    process = await start_bot("--console", env=env)
    url = await served_at(process)
    before = await scrape(url)
    assert before.total("tomori_turns_total") == 0
    assert await probe(url, "/readyz") == (200, "ready\n")  # no gateway: its database answers

    await type_line(process, "tell me about the quiet lighthouse")
    await read_until(process, "The lighthouse keeper waves.")
    after = await once_ended(url)
    assert after.value("tomori_turns_total", outcome="done") == 1
    assert after.value("tomori_model_parts_total", model="openai:test-model", outcome="completed")
    assert after.value("tomori_tokens_total", model="openai:test-model", kind="completion") > 0
    assert after.value("tomori_turn_first_text_seconds_count") == 1
    assert leaks(after, ["lighthouse", "quiet", SECRET_KEY, "console"]) == []

    out, err = await finished(process, stdin=b"")
    assert process.returncode == 0, out + err


async def once_ended(url: str, within_s: float = 10) -> Scraped:
    """The first scrape that counts the console's turn as ended (its answer is printed as it
    streams, a moment before the turn records how it ended)."""
    async with asyncio.timeout(within_s):
        while not (scraped := await scrape(url)).total("tomori_turns_total"):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    return scraped
