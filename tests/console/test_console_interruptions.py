"""In the console, as in a channel, the person being answered steers the answer: a message
sent while it streams is a follow-up, and a stop word stops it (a terminal, as a person
types; a script is read as written)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from tests.support.console_process import (
    bot_environment,
    console_in_terminal,
    finished,
    leave,
    read_terminal,
    start_bot,
)
from tests.support.llm_server import LLMServer, Reply, SeenRequest, pause
from tests.support.scripts import answer, stalled_after
from tests.support.terminal_screen import on_screen

pytestmark = pytest.mark.slow  # bot.py --console run on a pty

STALLS = {"STREAM_SDK_CALL_TIMEOUT_MS": "60000"}
"""A stalled answer would hold the console a minute: a test that ends sooner was interrupted."""
NOTE = "[Note from the bot, not part of the conversation: answers stopped before this one]"
"""How the model's note on the answers stopped before its own begins, as a channel's does."""


def shown_to_model(request: SeenRequest) -> list[str]:
    return [str(message["content"]).strip() for message in request.body["messages"][1:]]


async def closed_within(llm_server: LLMServer, since: float, seconds: float) -> None:
    """The first answer's connection was closed, `seconds` at most after `since`."""
    connection = llm_server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), seconds + 1)
    assert connection.closed_at is not None
    assert connection.closed_at - since < seconds


async def test_a_follow_up_stops_the_answer_and_the_next_answer_covers_both(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(stalled_after("Python 3.11 has...\n\n"), answer("In 3.12, f-strings..."))
    seen = [""]
    env = bot_environment(llm_server, tmp_path, **STALLS)
    async with console_in_terminal(env) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, b"what is new in python?\r")
        await read_terminal(terminal, "Python 3.11 has...", seen)
        said_at = time.monotonic()
        os.write(terminal, b"wait, I meant 3.12\r")
        await closed_within(llm_server, said_at, 1.0)
        await read_terminal(terminal, "In 3.12, f-strings...\nyou #", seen)
        await leave(process, terminal)
    assert len(llm_server.requests) == 2
    assert shown_to_model(llm_server.requests[1]) == [
        "user: what is new in python?",
        "Python 3.11 has...",
        f"user: wait, I meant 3.12\n{NOTE}\n"
        '- Your answer to "user: what is new in python?" was cut short after the part of it'
        " shown above, because its author wrote again: answer what they added, without"
        " repeating what you said.",
    ]
    assert "[tomori #4, replying to #3]\nIn 3.12, f-strings..." in on_screen(seen[0])


async def test_follow_ups_in_a_row_each_cut_the_answer_and_the_last_answer_covers_all(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """Each message typed is sent apart (a paste would be one), so each follow-up cuts the
    answer to the one before it; those answers had shown nothing, and the last covers all."""
    slow = Reply(body=[pause(1.0), *answer("All three, then.").body])
    llm_server.script(stalled_after("Thinking.\n\n"), slow, slow, slow)
    seen = [""]
    async with console_in_terminal(bot_environment(llm_server, tmp_path, **STALLS)) as (
        process,
        terminal,
    ):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, b"one\r")
        await read_terminal(terminal, "Thinking.", seen)
        for line in (b"two\r", b"three\r", b"four\r"):
            os.write(terminal, line)
            await asyncio.sleep(0.3)  # apart, as typed: each its own message
        await read_terminal(terminal, "All three, then.\nyou #", seen)
        await leave(process, terminal)  # no answer left owed: Ctrl+D exits at once
    said, note = shown_to_model(llm_server.requests[-1])[-1].split(f"\n{NOTE}\n")
    assert said == "user: two\nuser: three\nuser: four"
    assert note.splitlines()[0] == (  # (which of two and three got a turn is timing)
        '- Your answer to "user: one" was cut short after the part of it shown above, because'
        " its author wrote again: answer what they added, without repeating what you said."
    )
    assert on_screen(seen[0]).count("[tomori #") == 2
    assert on_screen(seen[0]).count("All three, then.") == 1


async def test_a_stop_word_stops_the_answer_and_clears_the_queue(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(stalled_after("Thinking hard.\n\n"), answer("Hello again."))
    seen = [""]
    env = bot_environment(llm_server, tmp_path, TOMORI_FOLLOW_UPS="0", **STALLS)
    async with console_in_terminal(env) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, b"think\r")
        await read_terminal(terminal, "Thinking hard.", seen)
        os.write(terminal, b"and another thing\r")  # follow-ups off: queued
        await asyncio.sleep(0.3)
        said_at = time.monotonic()
        os.write(terminal, b"Stop!\r")
        await closed_within(llm_server, said_at, 1.0)
        await read_terminal(terminal, "you #5> ", seen)  # the prompt is back: nothing owed
        assert len(llm_server.requests) == 1  # the queued message was cleared
        os.write(terminal, b"hi\r")  # the channel answers again
        await read_terminal(terminal, "Hello again.\nyou #", seen)
        await leave(process, terminal)
    assert len(llm_server.requests) == 2
    said = shown_to_model(llm_server.requests[1])[-1]
    assert said.endswith(  # the stop word is no message; the model is told what it stopped
        f"user: and another thing\nuser: hi\n{NOTE}\n"
        '- Your answer to "user: think" was stopped after the part of it shown above. Do not'
        " answer it unless someone asks again.\n"
        '- "user: and another thing" was taken off the queue by a stop before its answer'
        " began. Do not answer it unless someone asks again."
    )
    assert "(#4 stopped the answer and cleared #3)" in on_screen(seen[0])
    assert "you #4> " not in on_screen(seen[0])  # no prompt between the stop and its line


async def test_followups_off_for_the_console_queues_a_second_message_and_show_says_so(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Answer A.", gap=0.2), answer("Answer B."))
    seen = [""]
    async with console_in_terminal(bot_environment(llm_server, tmp_path)) as (process, terminal):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, b"/tomori show\r")
        await read_terminal(terminal, "Follow-ups: on (the bot's settings)", seen)
        os.write(terminal, b"/tomori followups off\r")
        await read_terminal(terminal, "Follow-ups in this server: off", seen)
        os.write(terminal, b"/tomori show\r")
        await read_terminal(terminal, "Follow-ups: off (this server)", seen)
        os.write(terminal, b"a\r")
        await llm_server.request_arrived.wait()
        os.write(terminal, b"b\r")
        await read_terminal(terminal, "Answer B.\nyou #", seen)
        await leave(process, terminal)
    assert "Answer A." in on_screen(seen[0])  # whole: the second message waited its turn
    assert [shown_to_model(request)[-1] for request in llm_server.requests] == [
        "user: a",
        "user: b",
    ]


async def test_a_script_is_answered_line_by_line_and_its_stop_word_stops_the_answer(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """Piped, lines are read at once: each is answered in turn (a script cannot time a
    follow-up), while a stop word, like /kill, acts as it is read."""
    llm_server.script(answer("One.", gap=0.1), answer("Two."), stalled_after("Three.\n\n"))
    env = bot_environment(llm_server, tmp_path, **STALLS)
    process = await start_bot("--console", env=env)
    out, err = await finished(process, b"first\nsecond\n")
    assert process.returncode == 0, err
    assert out == (
        "[you #1] first\n[you #2] second\n[tomori #3]\nOne.\n[tomori #4, replying to #2]\nTwo.\n"
    )
    started = time.monotonic()
    process = await start_bot("--console", env=env)
    out, err = await finished(process, b"third\nfourth\nstop\n")
    assert process.returncode == 0, err
    assert time.monotonic() - started < 20  # not the minute the stalled model would take
    assert "[you #1] third\n" in out
    assert "[you #2] fourth\n[you #3] stop\n(#3 stopped the answer and cleared #2)\n" in out
    assert "Timed Out" not in out
    sent = [shown_to_model(request)[-1] for request in llm_server.requests]
    assert sent[2:] in ([], ["user: third"])  # stopped as it started, or as it stalled


async def test_ctrl_c_while_an_answer_streams_drops_what_was_typed_meanwhile(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(stalled_after("Thinking.\n\n"), answer("Fresh."))
    seen = [""]
    async with console_in_terminal(bot_environment(llm_server, tmp_path, **STALLS)) as (
        process,
        terminal,
    ):
        await read_terminal(terminal, "you #1> ", seen)
        os.write(terminal, b"think\r")
        await read_terminal(terminal, "Thinking.", seen)
        os.write(terminal, b"half typ")  # unseen while the answer streams
        await asyncio.sleep(0.3)
        process.send_signal(signal.SIGINT)
        await read_terminal(terminal, "[Stream Stopped]", seen)
        await read_terminal(terminal, "you #3> ", seen)
        os.write(terminal, b"new\r")
        await read_terminal(terminal, "Fresh.\nyou #", seen)
        await leave(process, terminal)
    assert shown_to_model(llm_server.requests[1])[-1].endswith(
        f"user: new\n{NOTE}\n"
        '- Your answer to "user: think" was stopped after the part of it shown above. Do not'
        " answer it unless someone asks again."
    )
    assert "half" not in on_screen(seen[0])


async def test_help_names_the_stop_words_in_force(llm_server: LLMServer, tmp_path: Path) -> None:
    env = bot_environment(llm_server, tmp_path, TOMORI_STOP_WORDS="halt!, Basta")
    process = await start_bot("--console", env=env)
    out, err = await finished(process, b"/help\n")
    assert process.returncode == 0, err
    assert "A stop word alone (basta, halt) stops the answer" in " ".join(out.split())
