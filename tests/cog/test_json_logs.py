"""TOMORI_LOG_FORMAT=json: a turn's log lines, as the `tomori` command writes them, are JSON
objects that carry the turn's id, channel, model and outcome, and none of the conversation."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.bots import OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer, Reply
from tests.support.scripts import answer
from tests.support.world import CHANNEL_ID
from tomori.config.settings import LogFormat
from tomori.log_lines import log_handler

ASKED = "what rhymes with marmalade"
ANSWERED = "Nothing rhymes with that, said the zebra."


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The command's log handler for TOMORI_LOG_FORMAT=json at INFO, on the root logger as the
    command installs it, writing into the returned buffer."""
    written = io.StringIO()
    handler = log_handler(LogFormat.JSON, written)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield written
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def test_a_turns_json_lines_carry_its_id_channel_model_and_outcome_and_no_words(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, json_log: io.StringIO
) -> None:
    """A turn whose first model fails and whose fallback answers: each line about it says
    which turn, which channel and which model; the last says how it ended; no line holds
    what the member wrote or what the model answered."""
    bot = await open_bot(
        settings_for(tmp_path), chain_for(llm_server, "openai:first-model,openai:second-model")
    )
    down = Reply(500, json_body={"error": {"message": "down"}})
    llm_server.script(down, down, answer(ANSWERED))  # the first model fails twice, then falls over
    await bot.say(f"{bot.mention()} {ASKED}")
    await bot.settled()
    assert ANSWERED in "\n".join(await bot.contents())

    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    assert lines, "the turn logged nothing at INFO"
    for line in lines:
        assert {"time", "level", "logger", "message"} <= line.keys(), line
        assert "marmalade" not in json.dumps(line)
        assert "zebra" not in json.dumps(line)
    [ended] = [line for line in lines if re.match(r"turn \S+ in channel \S+: ", line["message"])]
    turn_id = ended["message"].split()[1]
    assert ended["turn_id"] == turn_id
    assert ended["channel_id"] == str(CHANNEL_ID)
    assert ended["model"] == "openai:second-model"
    assert ended["outcome"] == "completed"
    failed = [line for line in lines if "first-model ended with" in line["message"]]
    assert [(line["turn_id"], line["model"]) for line in failed] == [
        (turn_id, "openai:first-model")
    ]
    assert all(line.get("turn_id") in (None, turn_id) for line in lines)
