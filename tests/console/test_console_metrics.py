"""`tomori --console` with TOMORI_METRICS_ADDR, as an operator tries metrics before deploying:
a turn typed in the console moves the counters a scrape of its `/metrics` reads (issue 38's
"done when"), and its `/readyz` is its database answering."""

from __future__ import annotations

import asyncio
import resource
import subprocess
from pathlib import Path

from tests.support.command import COMMAND
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
from tomori.monitoring.serving import READ_WITHIN_S

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


async def once_ended(url: str, within_s: float = 10, turns: int = 1) -> Scraped:
    """The first scrape that counts the console's `turns` as ended (an answer is printed as it
    streams, a moment before the turn records how it ended)."""
    async with asyncio.timeout(within_s):
        while (scraped := await scrape(url)).total("tomori_turns_total") < turns:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    return scraped


async def test_idle_connections_to_the_metrics_port_leave_a_turn_its_file_descriptors(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """Hundreds of connections that send nothing (more than the process may open files) and
    the console still answers: the ones past the cap are closed at once, and the log is not
    flooded with failed accepts."""
    llm_server.script(answer("Still here."))
    env = bot_environment(llm_server, tmp_path, TOMORI_METRICS_ADDR="127.0.0.1:0")
    process = await asyncio.create_subprocess_exec(
        *COMMAND,
        "--console",
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, FILES)),
    )
    try:
        url = await served_at(process)
        logged = asyncio.create_task(_read_all(process.stderr))
        host, port = url.removeprefix("http://").rsplit(":", 1)
        idle = [await asyncio.open_connection(host, int(port)) for _ in range(FILES + 50)]
        try:
            last_reader = idle[-1][0]
            async with asyncio.timeout(READ_WITHIN_S / 2):  # closed at once, not timed out
                assert await last_reader.read() == b""
            await type_line(process, "are you still there?")
            await read_until(process, "Still here.", within_s=READ_WITHIN_S / 2)
        finally:
            for _, writer in idle:
                writer.close()
        assert process.stdin is not None
        process.stdin.close()
        async with asyncio.timeout(30):
            err = await logged
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err[-2000:]
    assert err.count("closed a connection to the metrics port") == 1, err[-2000:]
    assert err.count("out of system resource") <= 1, err[-2000:]


FILES = 256
"""The console's limit of open files in the test above: far more than it needs, and than
`MAX_CONNECTIONS`; fewer than the connections the test opens."""


async def _read_all(stream: asyncio.StreamReader | None) -> str:
    assert stream is not None
    return (await stream.read()).decode()


async def test_a_model_an_admin_chose_is_counted_as_other_never_by_its_name(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """`TOMORI_ALLOWED_MODELS='openai:*'` lets an admin name any model: each would be a new
    series, and its text (a mention, a key pasted by mistake) would show in every scrape."""
    chosen = "openai:<@123456789012345678>sk-proj-LEAKY"
    llm_server.script(answer("Chosen model speaking."), answer("Back to the author's."))
    env = bot_environment(
        llm_server, tmp_path, TOMORI_METRICS_ADDR="127.0.0.1:0", TOMORI_ALLOWED_MODELS="openai:*"
    )
    process = await start_bot("--console", env=env)
    url = await served_at(process)
    await type_line(process, f"/tomori model {chosen}")
    await type_line(process, "who is answering?")
    await read_until(process, "Chosen model speaking.")
    await type_line(process, "/tomori model openai:test-model")
    await type_line(process, "and now?")
    await read_until(process, "Back to the author's.")
    scraped = await once_ended(url, turns=2)
    assert scraped.value("tomori_model_parts_total", model="other", outcome="completed") == 1
    assert (
        scraped.value("tomori_model_parts_total", model="openai:test-model", outcome="completed")
        == 1
    )
    assert scraped.value("tomori_tokens_total", model="other", kind="completion") > 0
    assert leaks(scraped, ["123456789012345678", "LEAKY", "<@"]) == []
    out, err = await finished(process, stdin=b"")
    assert process.returncode == 0, out + err
