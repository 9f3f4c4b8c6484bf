"""`python bot.py --console` as a good REPL: what a newcomer types and sees, piped or on a pty."""

from __future__ import annotations

from pathlib import Path

from tests.support.console_process import bot_environment, finished, start_bot
from tests.support.llm_server import LLMServer
from tests.support.scripts import answer


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
