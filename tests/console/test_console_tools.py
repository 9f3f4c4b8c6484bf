"""MCP servers in the console. A tool that may change things: the person at the terminal allows
each call with `yes` (a real MCP server written with the SDK, bot.py --console on a pty), and a
piped console, which nobody can be asked in, runs none. A server's stderr: in the log, never in
the terminal; a server that exits at once is said once, with its exit code and last words."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.console_process import (
    bot_environment,
    console_in_terminal,
    finished,
    leave,
    read_terminal,
    read_until,
    start_bot,
    type_line,
)
from tests.support.llm_server import LLMServer
from tests.support.mcp_servers import (
    DYING_CODE,
    DYING_WORDS,
    ROOT,
    ROOT_VARIABLE,
    McpFolder,
    exits_at_once,
    stdio_config,
)
from tests.support.scripts import answer, tool_call
from tests.support.terminal_screen import on_screen
from tests.support.waiting import until


def environment(llm_server: LLMServer, tmp_path: Path) -> dict[str, str]:
    config, _ = stdio_config(tmp_path)
    return bot_environment(
        llm_server, tmp_path, TOMORI_MCP_CONFIG=str(config), **{ROOT_VARIABLE: str(ROOT)}
    )


@pytest.mark.slow  # bot.py --console run on a pty
async def test_the_person_at_the_terminal_allows_a_call_with_yes(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(
        tool_call("tests__write", '{"text": "from the console"}'),
        answer("Written."),
        tool_call("tests__wipe", "{}", call_id="call_2"),
        answer("Left alone."),
    )
    seen = [""]
    env = environment(llm_server, tmp_path)
    async with console_in_terminal(env) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, b"write my note\r")
        await read_terminal(terminal, "(type yes to allow it, or no)", seen)
        assert not (tmp_path / "mcp" / "wrote").exists()
        os.write(terminal, b"yes\r")
        await read_terminal(terminal, "Written.", seen)
        os.write(terminal, b"now wipe it\r")
        await read_terminal(terminal, "run `tests__wipe` for you", seen)
        await read_terminal(terminal, "(type yes to allow it, or no)\nyou #", seen)
        os.write(terminal, b"no\r")
        await read_terminal(terminal, "Left alone.", seen)
        await leave(process, terminal)
    assert (tmp_path / "mcp" / "wrote").read_text() == "from the console"
    assert not (tmp_path / "mcp" / "wiped").exists()
    screen = on_screen(seen[0])
    assert (
        "(type yes to allow it, or no)\nyou #2> yes\nyou allowed `tests__write`: it runs.\n"
        in screen
    )
    assert "you refused `tests__wipe`: it was not run." in screen
    refused = json.loads(llm_server.requests[3].body["messages"][-1]["content"])
    assert refused["status"] == "not_run"
    assert len(llm_server.requests) == 4  # "yes" and "no" answered: neither was a message


async def test_a_piped_console_runs_no_call_that_needs_confirming(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(tool_call("tests__write", '{"text": "x"}'), answer("Could not."))
    process = await start_bot("--console", env=environment(llm_server, tmp_path))
    out, err = await finished(process, b"write x\nyes\n")
    assert process.returncode == 0, err
    assert "\nCould not.\n" in out
    assert not (tmp_path / "mcp" / "wrote").exists()
    told = json.loads(llm_server.requests[1].body["messages"][-1]["content"])
    assert told["reason"].endswith("nobody can be asked here")


async def test_an_mcp_servers_stderr_reaches_neither_the_answer_nor_the_terminal(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """A server writes its logs on stderr: they go to the log (tomori.mcp.NAME, at INFO, which
    the console does not print), never raw beside the console's lines."""
    llm_server.script(tool_call("tests__echo", '{"text": "hi"}'), answer("It said echo: hi."))
    process = await start_bot("--console", env=environment(llm_server, tmp_path))
    out, err = await finished(process, b"echo hi\n")
    assert process.returncode == 0, err
    assert out == "[you #1] echo hi\n[tomori #2]\nIt said echo: hi.\n"
    assert "tomori-test" not in err  # "serving on stdio", "echo hi"


async def test_a_server_that_exits_at_once_is_reported_once_with_its_code_and_last_words(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    folder = McpFolder(tmp_path / "dies")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"dies": exits_at_once(folder.path)}}))
    llm_server.script(answer("Hello."))
    env = bot_environment(llm_server, tmp_path, TOMORI_MCP_CONFIG=str(config))
    process = await start_bot("--console", env=env)
    await type_line(process, "hello")
    await read_until(process, "Hello.")
    await until(lambda: folder.starts >= 3)  # started again twice, after its backoff
    _, err = await finished(process, b"")
    assert process.returncode == 0, err
    words = " | ".join(DYING_WORDS)
    assert err.splitlines() == [
        f"WARNING tomori.tools.mcp_server: MCP server dies: it exited with code {DYING_CODE} "
        f"as it started; its last lines on stderr: {words}"
    ]
