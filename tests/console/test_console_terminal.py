"""`python bot.py --console` at a terminal (a pty): pastes, numbered lines, typing, the prompt."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from tests.support.console_process import (
    bot_environment,
    console_in_terminal,
    leave,
    read_terminal,
)
from tests.support.llm_server import LLMServer, Reply, SeenRequest, pause, sse
from tests.support.openai_wire import chunk
from tests.support.scripts import answer
from tests.support.terminal_screen import on_screen
from tomori.console.terminal import PASTE_END, PASTE_START

pytestmark = pytest.mark.slow  # bot.py --console run as a process on a pty

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "app.py", line 3, in <module>\n'
    "    main()\n"
    '  File "app.py", line 2, in main\n'
    '    raise ValueError("bad")\n'
    "ValueError: bad"
)


def said_last(request: SeenRequest) -> str:
    """The last message the model was sent."""
    return str(request.body["messages"][-1]["content"])


def keys(text: str) -> bytes:
    """`text` as a terminal sends it: Enter (and a pasted line end) as a carriage return."""
    return text.replace("\n", "\r").encode()


async def test_a_bracketed_paste_is_one_message_and_one_turn_its_indentation_kept(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("The call raised it."))
    seen = [""]
    async with console_in_terminal(bot_environment(llm_server, tmp_path)) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, keys(f"{PASTE_START}{TRACEBACK}\n{PASTE_END}"))
        await asyncio.sleep(0.3)  # the paste's last line end did not send it
        assert llm_server.requests == []
        os.write(terminal, keys("why?\n"))
        await read_terminal(terminal, "you #3> ", seen)
        await leave(process, terminal)
    pasted = f"{TRACEBACK}\nwhy?".replace("\n", "\n  ")  # every line the user's own
    assert [said_last(request) for request in llm_server.requests] == [f"user: {pasted}"]
    shown = on_screen(seen[0]).split("\n", 1)[1]  # after the banner
    assert shown == f"you #1> {TRACEBACK}\nwhy?\n[tomori #2]\nThe call raised it.\nyou #3> "


async def test_a_paste_the_terminal_does_not_mark_is_one_message_too(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """A terminal without bracketed paste: the lines come at once, faster than anyone types."""
    llm_server.script(answer("The call raised it."))
    seen = [""]
    async with console_in_terminal(bot_environment(llm_server, tmp_path)) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, keys(f"{TRACEBACK}\n"))
        await read_terminal(terminal, "you #3> ", seen)
        await leave(process, terminal)
    pasted = TRACEBACK.replace("\n", "\n  ")  # every line the user's own
    assert [said_last(request) for request in llm_server.requests] == [f"user: {pasted}"]
    assert f"you #1> {TRACEBACK}\n[tomori #2]\nThe call raised it.\nyou #3> " in on_screen(seen[0])


async def test_lines_are_numbered_as_answers_refer_to_them_and_keys_wait_for_the_answer(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """What is typed while an answer streams never cuts into it: a message sent meanwhile
    shows after the answer, with the number it took when sent (#3, between the answer's two
    messages, as in a channel), and a draft comes back with the next prompt. (Follow-ups are
    off: on, the message sent meanwhile would cut the answer.)"""
    llm_server.script(
        answer("First paragraph.\n\nSecond, written slowly.", gap=0.3),
        answer("Second."),
        answer("Third."),
    )
    seen = [""]
    env = bot_environment(llm_server, tmp_path, TOMORI_FOLLOW_UPS="0")
    async with console_in_terminal(env) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, keys("one\n"))
        await read_terminal(terminal, "[tomori #2]\nFirst paragraph.", seen)
        for key in keys("two\nthr"):
            os.write(terminal, bytes([key]))
            await asyncio.sleep(0.05)  # typed, not pasted
        await read_terminal(terminal, "you #6> thr", seen)
        os.write(terminal, keys("ee\n"))
        await read_terminal(terminal, "you #8> ", seen)
        os.write(terminal, keys("\n"))  # an empty line: a fresh prompt, nothing sent
        await read_terminal(terminal, "you #8> \nyou #8> ", seen)
        await leave(process, terminal)
    assert [said_last(request) for request in llm_server.requests] == [
        "user: one",
        "user: two",
        "user: three",
    ]
    shown = on_screen(seen[0]).split("\n", 1)[1]
    assert shown == (
        "you #1> one\n[tomori #2]\nFirst paragraph.\n[you #3] two\n[tomori #4]\n"
        "Second, written slowly.\n[tomori #5, replying to #3]\nSecond.\n"
        "you #6> three\n[tomori #7]\nThird.\n"
        "you #8> \nyou #8> "
    )


async def test_a_slow_model_shows_it_is_typing_until_its_words_come(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(
        Reply(
            body=[
                pause(1.0),
                sse(chunk("First paragraph.\n\n")),
                pause(1.0),
                sse(chunk("Second paragraph.")),
                sse(chunk(finish="stop")),
                sse("[DONE]"),
            ]
        )
    )
    env = bot_environment(llm_server, tmp_path, STREAM_FIRST_TOKEN_TIMEOUT_MS="5000")
    seen = [""]
    async with console_in_terminal(env) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, keys("hello\n"))
        await read_terminal(terminal, "hello\ntomori is typing…", seen)
        assert "First" not in seen[0]
        await read_terminal(terminal, "First paragraph.\ntomori is typing…", seen)
        assert "Second" not in seen[0]  # written while the typing line stands
        await read_terminal(terminal, "you #4> ", seen)
        await leave(process, terminal)
    shown = on_screen(seen[0]).split("\n", 1)[1]
    assert shown == (
        "you #1> hello\n[tomori #2]\nFirst paragraph.\n[tomori #3]\nSecond paragraph.\nyou #4> "
    )


async def test_kill_prints_its_notice_and_one_prompt(llm_server: LLMServer, tmp_path: Path) -> None:
    llm_server.script(
        Reply(body=[sse(chunk("First paragraph.\n\n")), pause(5.0), sse(chunk("Never."))])
    )
    env = bot_environment(
        llm_server,
        tmp_path,
        STREAM_FIRST_TOKEN_TIMEOUT_MS="10000",
        STREAM_SDK_CALL_TIMEOUT_MS="10000",
    )
    seen = [""]
    async with console_in_terminal(env) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, keys("hello\n"))
        await read_terminal(terminal, "[tomori #2]\nFirst paragraph.", seen)
        os.write(terminal, keys("/kill\n"))
        await read_terminal(terminal, "[Stream Stopped] ", seen)
        await read_terminal(terminal, "you #3> ", seen)
        await asyncio.sleep(0.5)  # anything printed late would show now
        await leave(process, terminal)
    shown = on_screen(seen[0])
    assert shown.count("you #") == 2
    assert shown.endswith(
        "First paragraph.\n[Stream Stopped] Stopped the active response stream"
        " (if any) and cleared queued responses in this channel.\nyou #3> "
    )


async def test_backspace_ctrl_w_ctrl_u_up_and_ctrl_c_edit_the_draft(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Hi."))
    seen = [""]
    async with console_in_terminal(bot_environment(llm_server, tmp_path)) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, b"never sent")
        await read_terminal(terminal, "you #1> never sent", seen)
        process.send_signal(signal.SIGINT)  # Ctrl+C: the draft goes, the console stays
        await read_terminal(terminal, "you #1> never sent^C\nyou #1> ", seen)
        os.write(terminal, b"helo wrld")
        await read_terminal(terminal, "helo wrld", seen)
        os.write(terminal, b"\x17\x7f\x7flo world\r")
        await read_terminal(terminal, "you #3> ", seen)
        os.write(terminal, b"\x1b[A")  # Up: the message sent before
        await read_terminal(terminal, "you #3> hello world", seen)
        await leave(process, terminal, b"\x15\x04")  # Ctrl+U empties the draft, Ctrl+D leaves
    assert [said_last(request) for request in llm_server.requests] == ["user: hello world"]
    assert "you #1> hello world\n[tomori #2]\nHi.\nyou #3> " in on_screen(seen[0])
