"""A whole bot process for crash and multi-process tests: a real nextcord bot with tomori-cog
on the REST recorder, talking to the test's LLM server, driven through stdin.

    python -m tests.support.bot_process DB_PATH LLM_BASE_URL [SEEDS_JSON]

SEEDS_JSON is a file of message payloads Discord already holds, stored before the cog starts
(a restarted bot replays queued triggers at once and reads their messages).

Reads JSON lines: {"seed": payload} stores a message as Discord would have it; {"say": payload}
also delivers it through the gateway path; {"kill": true} runs /kill in the channel. Writes
JSON lines: {"ready": true} once serving, {"sent": content, "reply_to": id or null} for every
message the bot posts, and {"kill_reply": title} for the answer to a /kill.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tests.support.nextcord_fake import CHANNEL_ID, start_nextcord_bot
from tomori.config import Settings
from tomori.models import ModelChain


class _Setattr:
    def setattr(self, target: Any, name: str, value: Any) -> None:
        setattr(target, name, value)


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


async def main(db_path: str, base_url: str, known: list[dict[str, Any]]) -> None:
    settings = Settings(db_path=Path(db_path), stream_abandoned_settle_timeout_ms=50)
    chain = ModelChain.from_env(
        {"TOMORI_MODELS": "openai:m", "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": f"{base_url}/v1"}
    )
    bot = await start_nextcord_bot(settings, chain, _Setattr(), messages=known)
    create = bot.discord._create

    def reporting_create(channel_id: int, body: dict[str, Any]) -> dict[str, Any]:
        payload = create(channel_id, body)
        reference = body.get("message_reference") or {}
        emit({"sent": payload["content"], "reply_to": reference.get("message_id")})
        return payload

    bot.discord._create = reporting_create  # type: ignore[method-assign]
    emit({"ready": True})
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        command = json.loads(line)
        if "seed" in command:
            bot.discord.add(CHANNEL_ID, command["seed"])
        if "say" in command:
            bot.discord.add(CHANNEL_ID, command["say"])
            bot.bot._connection.parse_message_create(command["say"])
        if "kill" in command:
            reply = await bot.kill()
            emit({"kill_reply": reply["data"]["embeds"][0]["title"]})


if __name__ == "__main__":
    seeds = json.loads(Path(sys.argv[3]).read_text()) if len(sys.argv) > 3 else []
    asyncio.run(main(sys.argv[1], sys.argv[2], seeds))
