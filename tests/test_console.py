"""`python bot.py --console`: the cog's machinery answering in a terminal, as a newcomer runs it."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

from tests.support.console_process import (
    SECRET_KEY,
    bot_environment,
    finished,
    read_until,
    start_bot,
    type_line,
)
from tests.support.llm_server import LLMServer, SeenRequest
from tests.support.scripts import answer, silent, stalled_after


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
    assert out == (
        "[you #1] a\n[tomori #4]\nAnswer A.\n"
        "[you #2] b\n[tomori #5, replying to #2]\nAnswer B.\n"
        "[you #3] c\n[tomori #6, replying to #3]\nAnswer C.\n"
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
        "[you #1] hello\n[tomori #3]\nFirst paragraph.\n"
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
