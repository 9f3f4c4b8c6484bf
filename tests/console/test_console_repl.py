"""`python bot.py --console` as a good REPL: what a newcomer types and sees, piped or on a pty."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.console_process import (
    bot_environment,
    finished,
    read_until,
    start_bot,
    type_line,
)
from tests.support.llm_server import LLMServer, SeenRequest
from tests.support.scripts import answer

pytestmark = pytest.mark.slow  # bot.py --console run as a process


def said_last(request: SeenRequest) -> str:
    """The last message the model was sent."""
    return str(request.body["messages"][-1]["content"])


async def test_bidi_overrides_and_invisible_marks_print_as_escapes(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Open invoice\u202efdp.exe\u2066 now\u200b.\u200d"))
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    out, err = await finished(process, "is it \u202esafe?\n".encode())
    assert process.returncode == 0, err
    assert out == (
        "[you #1] is it \\u202esafe?\n"
        "[tomori #2]\nOpen invoice\\u202efdp.exe\\u2066 now\\u200b.\u200d\n"
    )


async def test_help_exit_and_unknown_commands_never_reach_the_model(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    # the first answer takes 0.8 s: the later message waits its turn, replying to its line
    llm_server.script(answer("Hello from the model.", gap=0.1), answer("Disks fill up."))
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    typed = "hello\n/help\n/foo bar\n//etc is full\n/exit\nnever sent\n"
    out, err = await finished(process, typed.encode())
    assert process.returncode == 0, err
    assert [said_last(request) for request in llm_server.requests] == [
        "user: hello",
        "user: /etc is full",
    ]
    answered = out.index("Hello from the model.")
    assert answered < out.index("Commands:\n  /help")  # after the answer, never inside it
    assert "  /exit, /quit" in out
    assert "  /tomori model <models> [scope:server]\n" in out
    assert "\n(/foo is not a command: /help lists them; a message that starts with /foo is "
    assert "written //foo)\n" in out
    assert out.startswith("[you #1] hello\n[you #2] /etc is full\n[tomori #3]\n")
    assert "\n[tomori #4, replying to #2]\nDisks fill up.\n" in out
    assert "never sent" not in out


async def test_quit_ends_the_session_once_the_answer_is_done(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Hello from the model.", gap=0.1))
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    out, err = await finished(process, b"hello\n/quit\nnever sent\n")
    assert process.returncode == 0, err
    assert out == "[you #1] hello\n[tomori #2]\nHello from the model.\n"
    assert len(llm_server.requests) == 1


async def test_tomori_model_and_prompt_apply_from_the_next_turn_and_show_says_so(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Arr."), answer("Arr again."))
    environment = bot_environment(llm_server, tmp_path, TOMORI_ALLOWED_MODELS="openai:other-*")
    process = await start_bot("--console", env=environment)
    typed = (
        "/tomori model openai:other-model\n"
        "/tomori prompt text:You are a pirate.\n"
        "hello\n"
        "/tomori show\n"
        "/tomori reset\n"
        "again\n"
    )
    out, err = await finished(process, typed.encode())
    assert process.returncode == 0, err
    first, second = (request.body for request in llm_server.requests)
    assert first["model"] == "other-model"
    assert first["messages"][0] == {"role": "system", "content": "You are a pirate."}
    assert second["model"] == "test-model"  # reset: the bot's own settings again
    assert out == (  # piped, /tomori waits for the answers to the lines before it
        "[Tomori Settings] Models for this channel: openai:other-model\n"
        "[Tomori Settings] System prompt for this channel set (17 characters).\n"
        "[you #1] hello\n[tomori #2]\nArr.\n"
        "[Tomori in this channel] Models: openai:other-model (this channel)\n"
        "Context: openai:other-model 4096 tokens (the default for a server of "
        "OPENAI_BASE_URL), 1024 of them kept for the answer\n"
        "Summaries: on, written by openai:other-model (the chain's first model) in at most 300 "
        "tokens (its note at most 1/8 of each model's room), kept 365 days after last written\n"
        "Memories: on, at most 10 shown a turn (its note at most 1/8 of each model's room), 100 "
        "kept per scope, 300 characters each, kept 365 days after saved\n"
        "Answers every message: yes (the bot's settings)\n"
        "Limits: cooldown off, daily tokens per user off (the bot's settings)\n"
        "Scenes: on (the bot's settings)\n"
        "Follow-ups: on (the bot's settings)\n"
        "Swipes: on (the bot's settings)\n"
        "Progress: reactions (the bot's settings)\n"
        "Errors: reply (the bot's settings)\n"
        "Prefill: none\n"
        "System prompt (this channel):\n> You are a pirate.\n"
        "[Tomori Settings] Cleared the settings of this channel.\n"
        "[you #3] again\n[tomori #4]\nArr again.\n"
    )


async def test_tomori_limits_hold_the_console_to_a_cooldown_and_status_counts_its_turns(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Once."))
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    await type_line(process, "/tomori limits cooldown_ms:60000")
    await type_line(process, "one")
    shown = await read_until(process, "Once.")
    await type_line(process, "two")
    await type_line(process, "/tomori status")
    out, err = await finished(process, b"")
    assert process.returncode == 0, err
    assert len(llm_server.requests) == 1
    assert shown == (
        "[Tomori Settings] Limits for this server: cooldown 60000 ms, daily tokens per user off"
        " (this server; the bot's settings)\n[you #1] one\n[tomori #2]\nOnce.\n"
    )
    assert re.match(
        r"\[you #3\] two\n\[Slow Down, replying to #3\] You can ask me again in (1 min|5\d s)\.\n"
        r"\[Tomori in this server, last 24 hours\] Turns per model: openai:test-model 1\n",
        out,
    )


async def test_tomori_refuses_what_it_cannot_run_in_one_line(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    process = await start_bot("--console", env=bot_environment(llm_server, tmp_path))
    typed = (
        "/tomori limits cooldown_ms:soon\n"
        "/tomori autoreply true\n"
        "/tomori model\n"
        "/tomori model nowhere:model\n"
        "/tomori fly\n"
    )
    out, err = await finished(process, typed.encode())
    assert process.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 5
    assert all(line.startswith("[Not Changed] ") for line in lines)
    assert "cooldown_ms='soon' is not allowed" in lines[0]
    assert "/tomori autoreply applies to Discord channels" in lines[1]
    assert "give provider:model" in lines[2]
    assert "/tomori fly is not a subcommand" in lines[4]
    assert llm_server.requests == []
