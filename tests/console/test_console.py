"""`python bot.py --console`: the cog's machinery answering in a terminal, as a newcomer runs it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.command import run
from tests.support.console_process import (
    SECRET_KEY,
    bot_environment,
    console_in_terminal,
    finished,
    leave,
    read_terminal,
    read_until,
    start_bot,
    type_line,
)
from tests.support.llm_server import LLMServer, Reply, SeenRequest, pause, sse
from tests.support.mcp_servers import ROOT, ROOT_VARIABLE, stdio_config
from tests.support.openai_wire import chunk
from tests.support.scripts import (
    answer,
    http_error,
    in_parts,
    silent,
    stalled_after,
    tool_call,
)
from tests.support.terminal_screen import on_screen
from tomori.config.settings import Settings
from tomori.locks import ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.store.connect import open_database

pytestmark = pytest.mark.slow  # bot.py --console run as a process


def said_last(request: SeenRequest) -> str:
    """The last message the model was sent."""
    return str(request.body["messages"][-1]["content"])


async def test_a_piped_session_prints_the_answer_and_exits_at_the_end_of_input(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Hello from the model."))
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    out, err = await finished(process, b"hello\n")
    assert process.returncode == 0, err
    assert out == "[you #1] hello\n[tomori #2]\nHello from the model.\n"
    assert said_last(llm_server.requests[0]) == "user: hello"
    assert "DISCORD_TOKEN" not in err
    assert "Traceback" not in err


async def test_a_pasted_code_block_is_one_message_and_terminal_controls_print_inert(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("\x1b[2JCleared?\x07"), answer("One message."))
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    out, err = await finished(process, b"Why?\n```python\nprint(1)\n```\n")
    assert process.returncode == 0, err
    assert said_last(llm_server.requests[0]) == "user: Why?"
    assert len(llm_server.requests) == 2
    assert said_last(llm_server.requests[1]).endswith("```python\n  print(1)\n  ```")
    assert "\\x1b[2JCleared?\\x07" in out
    assert "\x1b" not in out


async def test_a_long_answer_is_cut_into_marked_messages_as_discord_would_show_it(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    long = "\n\n".join(f"Paragraph {n} " + "word " * 150 for n in range(4))  # ~3000 characters
    llm_server.script(answer(long, pieces=20))
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    out, err = await finished(process, b"write a lot\n")
    assert process.returncode == 0, err
    assert out.startswith("[you #1] write a lot\n[tomori #2]\nParagraph 0 ")
    assert "[tomori #3]\nParagraph" in out  # the second message starts at a paragraph
    assert all(len(part) <= 1950 for part in out.split("[tomori #")[1:])


async def test_a_stalled_model_shows_the_timeout_notice(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(silent())
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    out, err = await finished(process, b"hello\n")
    assert process.returncode == 0, err
    assert out == (
        "[you #1] hello\n[Response Timed Out] The AI provider didn't start responding in time. "
        "Its queue may be overloaded. Please try again.\n"
    )


async def test_a_stalled_model_falls_back_and_the_fallbacks_answer_shows(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(
        stalled_after("The first model's paragraph.\n\nand then it stalls"),
        answer("The second model's answer."),
    )
    env = bot_environment(llm_server, tmp_path, TOMORI_MODELS="openai:first,openai:second")
    process = await start_bot("--console", env=env)
    out, err = await finished(process, b"hello\n")
    assert process.returncode == 0, err
    assert out == (
        "[you #1] hello\n[tomori #2]\nThe first model's paragraph.\n"
        "[tomori #3]\nThe second model's answer.\n"
        "[Fallback Model Used] `openai:second` was used instead of `openai:first`.\n"
    )
    assert [request.body["model"] for request in llm_server.requests] == ["first", "second"]


async def test_lines_sent_while_an_answer_streams_are_queued_and_answered_in_order(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(
        answer("Answer A.", gap=0.1), answer("Answer B.", gap=0.1), answer("Answer C.")
    )
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    out, err = await finished(process, b"a\nb\nc\n")
    assert process.returncode == 0, err
    assert out == (  # in the order of their numbers, as Discord shows them
        "[you #1] a\n[you #2] b\n[you #3] c\n[tomori #4]\nAnswer A.\n"
        "[tomori #5, replying to #2]\nAnswer B.\n"
        "[tomori #6, replying to #3]\nAnswer C.\n"
    )
    assert [said_last(request) for request in llm_server.requests] == [
        "user: a",
        "user: b",
        "user: c",
    ]
    second = [m["content"] for m in llm_server.requests[1].body["messages"]]
    assert second[1:] == ["user: a", "Answer A.", "user: b"]  # c waits its own turn


async def test_kill_at_the_prompt_stops_a_slow_answer_and_clears_the_queue(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(stalled_after("First paragraph.\n\nand then the model stalls"))
    env = bot_environment(llm_server, tmp_path, STREAM_SDK_CALL_TIMEOUT_MS="60000")
    process = await start_bot("--console", env=env)
    started = time.monotonic()
    await type_line(process, "hello")
    await type_line(process, "queued behind it")
    await asyncio.wait_for(llm_server.request_arrived.wait(), 20)
    await asyncio.sleep(0.5)  # the first paragraph reaches the channel
    await type_line(process, "/kill")
    out, err = await finished(process, b"")
    assert process.returncode == 0, err
    assert time.monotonic() - started < 20  # not the 60 s the stalled model would take
    assert out == (
        "[you #1] hello\n[you #2] queued behind it\n[tomori #3]\nFirst paragraph.\n"
        "[Stream Stopped] Stopped the active response stream (if any) and cleared queued "
        "responses in this channel.\n"
    )
    assert len(llm_server.requests) == 1  # the queued line was cleared, as /kill clears it
    assert all(connection.closed_at is not None for connection in llm_server.connections)


async def test_ctrl_c_stops_the_answer_and_a_second_at_the_empty_prompt_exits(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(stalled_after("First paragraph.\n\nand then the model stalls"))
    env = bot_environment(llm_server, tmp_path, STREAM_SDK_CALL_TIMEOUT_MS="60000")
    process = await start_bot("--console", env=env)
    await type_line(process, "hello")
    await asyncio.wait_for(llm_server.request_arrived.wait(), 20)
    await asyncio.sleep(0.5)
    process.send_signal(signal.SIGINT)
    shown = await read_until(process, "[Stream Stopped]")
    assert shown.startswith("[you #1] hello\n[tomori #2]\nFirst paragraph.\n")
    process.send_signal(signal.SIGINT)
    out, err = await finished(process, within_s=10)
    assert process.returncode == 0, err
    assert out == ""
    assert "Traceback" not in err
    assert SECRET_KEY not in err


async def test_the_end_of_input_waits_for_the_answer_and_ctrl_d_at_an_idle_prompt_exits(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    out, err = await finished(process, b"")
    assert process.returncode == 0, err
    assert out == ""
    assert llm_server.requests == []


async def test_in_a_terminal_each_message_prints_as_it_is_sent_then_ctrl_d_exits(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(in_parts("First paragraph.\n\n", "Second paragraph."))
    seen = [""]
    async with console_in_terminal(bot_environment(llm_server, tmp_path)) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        assert on_screen(seen[0]).startswith(
            "tomori console: openai:test-model, messages delivery."
        )
        os.write(terminal, b"hello\r")
        await read_terminal(terminal, "Second paragraph.\nyou #4> ", seen)
        await leave(process, terminal)  # Ctrl+D at the empty prompt
    shown = on_screen(seen[0]).split("\n", 1)[1]
    assert shown == (
        "you #1> hello\n[tomori #2]\nFirst paragraph.\n[tomori #3]\nSecond paragraph.\nyou #4> "
    )


async def test_in_edit_delivery_one_message_grows_in_the_terminal(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(
        Reply(
            body=[
                sse(chunk("First paragraph.\n\n")),
                pause(1.0),
                sse(chunk("Second paragraph.")),
                sse(chunk(finish="stop")),
                sse("[DONE]"),
            ]
        )
    )
    env = bot_environment(
        llm_server,
        tmp_path,
        TOMORI_STREAM_DELIVERY="edit",
        STREAM_EDIT_INTERVAL_MS="100",
        STREAM_SDK_CALL_TIMEOUT_MS="10000",
    )
    seen = [""]
    async with console_in_terminal(env) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, b"hello\r")
        await read_terminal(terminal, "First paragraph.", seen)
        assert "Second" not in seen[0]  # shown before the answer is done: it grows
        await read_terminal(terminal, "Second paragraph.\nyou #3> ", seen)
        process.send_signal(signal.SIGINT)  # Ctrl+C at the empty prompt
        async with asyncio.timeout(10):
            await process.wait()
    assert process.returncode == 0
    shown = on_screen(seen[0]).split("\n", 1)[1]
    assert shown == "you #1> hello\n[tomori #2]\nFirst paragraph.\n\nSecond paragraph.\nyou #3> "


def test_help_names_the_console_and_the_check() -> None:
    result = run("--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "--console chat with the bot in this terminal, without Discord" in text
    assert "--check check the settings, the database and every model" in text


async def test_the_console_leaves_the_bots_database_and_its_queues_alone(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """A bot stopped with a message still queued: its next start answers it. A console run
    meanwhile on the same settings must not take the channel over (and drop the message)."""
    database = tmp_path / "tomori.db"
    await queue_left_by_a_stopped_bot(database)
    assert waiting_in(database) == {"1001", "1002"}
    before = database.read_bytes()
    llm_server.script(answer("Hello from the model."))
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    out, err = await finished(process, b"hello\n")
    assert process.returncode == 0, err
    assert out == "[you #1] hello\n[tomori #2]\nHello from the model.\n"
    assert database.read_bytes() == before
    assert waiting_in(database) == {"1001", "1002"}
    assert len(llm_server.requests) == 1


def waiting_in(database: Path) -> set[str]:
    """The messages of channel 123 that the next bot to start will answer."""
    with closing(sqlite3.connect(database)) as db:
        locked = db.execute("SELECT trigger_message_id FROM channel_locks WHERE channel_id='123'")
        queued = db.execute("SELECT message_id FROM queued_triggers WHERE channel_id = '123'")
        return {row[0] for row in [*locked.fetchall(), *queued.fetchall()]}


async def queue_left_by_a_stopped_bot(database: Path) -> None:
    """The bot's database with a channel's queue a closed process left to the next one."""
    settings = Settings(db_path=database)
    store = await open_database(settings)
    try:
        locks = ChannelLocks(lock_backend(store, settings), settings, never_answers)
        await locks.start()
        await locks.submit(Trigger("123", "1001", "42"))
        await locks.submit(Trigger("123", "1002", "42"))
        await locks.close()
    finally:
        await store.close()


async def never_answers(turn: Turn, guard: TurnGuard) -> None:
    await asyncio.Event().wait()  # the bot is stopped mid-answer


async def test_the_console_offers_an_mcp_servers_tools_and_answers_with_their_result(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    config, _ = stdio_config(tmp_path)
    llm_server.script(tool_call("tests__echo", '{"text": "hi"}'), answer("It said echo: hi."))
    env = bot_environment(
        llm_server, tmp_path, TOMORI_MCP_CONFIG=str(config), **{ROOT_VARIABLE: str(ROOT)}
    )
    process = await start_bot("--console", env=env)
    out, err = await finished(process, b"echo hi\n")
    assert process.returncode == 0, err
    assert out == "[you #1] echo hi\n[tomori #2]\nIt said echo: hi.\n"
    tool_message = llm_server.requests[1].body["messages"][-1]
    assert json.loads(tool_message["content"]) == {"result": {"text": "echo: hi"}}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_a_closed_terminal_ends_the_console_and_removes_its_folder(
    llm_server: LLMServer, tmp_path: Path, signum: signal.Signals
) -> None:
    """SIGHUP (the terminal closed) ends the console as SIGTERM does: its temporary folder,
    with the session's database, goes with it (a new user found it left behind)."""
    llm_server.script(answer("Hello."))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = bot_environment(llm_server, tmp_path, TMPDIR=str(temporary))
    process = await start_bot("--console", env=env)
    await type_line(process, "hello")
    await read_until(process, "Hello.")
    process.send_signal(signum)
    _, err = await finished(process, within_s=10)
    assert process.returncode == 0, err
    assert list(temporary.iterdir()) == []


async def test_with_json_logs_the_consoles_warnings_are_json_lines(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """TOMORI_LOG_FORMAT=json, as an operator tries the bot's logging in the console: a
    model's failure is logged as the bot logs it, one JSON object a line."""
    llm_server.script(http_error(500), http_error(500), answer("The second model's answer."))
    env = bot_environment(
        llm_server, tmp_path, TOMORI_MODELS="openai:first,openai:second", TOMORI_LOG_FORMAT="json"
    )
    process = await start_bot("--console", env=env)
    out, err = await finished(process, b"hello\n")
    assert process.returncode == 0, err
    assert "The second model's answer." in out
    lines = [json.loads(line) for line in err.splitlines()]
    assert any(line["level"] == "WARNING" and "openai:first" in line["message"] for line in lines)
    for line in lines:
        assert {"time", "level", "logger", "message"} <= line.keys(), line
