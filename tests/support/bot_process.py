"""A whole bot process for crash and multi-process tests: a real nextcord bot with tomori-cog
on the REST recorder, talking to the test's LLM server, driven through stdin.

    python -m tests.support.bot_process LLM_BASE_URL [SEEDS_JSON]

The database and every setting come from the environment, as a deployed bot reads them
(`Settings.from_env()`: TOMORI_DB_URL for PostgreSQL, else TOMORI_DB_PATH). The bot runs under
the `tomori` command's own `serve`, standing for a bot connected to the gateway, so SIGTERM
stops it the way a deploy stops the command: the cog closes (its turns end and release their
locks), then the bot.

SEEDS_JSON is a file of message payloads Discord already holds, stored before the cog starts
(a restarted bot replays queued triggers at once and reads their messages).

Reads JSON lines: {"seed": payload} stores a message as Discord would have it; {"say": payload}
also delivers it through the gateway path; {"delete": payload} deletes that message (and the
gateway says so); {"join": user_id} has that bot user join the guild; {"kill": channel_id}
runs /kill in that channel; {"respond": channel_id, "prompt": text} runs /respond there, as a
member with Manage Server.
With TESTS_CHANNEL_WINDOW_S set, the cog keeps each channel to Discord's writes per that many
seconds instead of its real window: for a test whose subject is not the pace (a turn at a
time, not how fast a channel may be written to) and that must not wait out Discord's buckets.

Writes JSON lines: {"ready": true} once serving, {"sent": content, "reply_to": id or null,
"channel": id} for every message the bot posts, {"kill_reply": title} for the answer to a
/kill, {"respond_reply": title} for the answer to a /respond, and {"closed": true} once a stop
signal has closed it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.support.nextcord_fake import NextcordBot, member_payload, start_nextcord_bot
from tests.support.pace import quicken_channel_pace
from tests.support.world import GUILD_ID
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori_cog.serving import serve


class _Setattr:
    def setattr(self, target: Any, name: str, value: Any) -> None:
        setattr(target, name, value)


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


async def main(base_url: str, known: list[dict[str, Any]]) -> None:
    if window := os.environ.get("TESTS_CHANNEL_WINDOW_S"):
        quicken_channel_pace(float(window), _Setattr())
    chain = ModelChain.from_env(
        {"TOMORI_MODELS": "openai:m", "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": f"{base_url}/v1"}
    )
    nc = await start_nextcord_bot(Settings.from_env(), chain, _Setattr(), messages=known)
    create = nc.discord._create

    def reporting_create(channel_id: int, body: dict[str, Any]) -> dict[str, Any]:
        payload = create(channel_id, body)
        reference = body.get("message_reference") or {}
        emit(
            {
                "sent": payload["content"],
                "reply_to": reference.get("message_id"),
                "channel": channel_id,
            }
        )
        return payload

    nc.discord._create = reporting_create  # type: ignore[method-assign]

    async def connected(token: str, *, reconnect: bool = True) -> None:
        await asyncio.Event().wait()  # connected to the gateway until the bot closes

    nc.bot.start = connected  # type: ignore[method-assign]
    serving = asyncio.create_task(serve(nc.bot, "token"))
    commands = asyncio.create_task(obey(nc))
    emit({"ready": True})
    await serving
    commands.cancel()
    await asyncio.gather(commands, return_exceptions=True)
    emit({"closed": True})


async def obey(nc: NextcordBot) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        command = json.loads(line)
        for key in ("seed", "say"):
            if key in command:
                nc.discord.add(int(command[key]["channel_id"]), command[key])
        state = nc.bot._connection
        if "say" in command:
            state.parsers["MESSAGE_CREATE"](command["say"])  # as the gateway hands it over
        if "delete" in command:
            nc.discord.delete(int(command["delete"]["channel_id"]), int(command["delete"]["id"]))
        if "join" in command:
            member = member_payload(int(command["join"]), "proxybot", bot=True)
            state.parsers["GUILD_MEMBER_ADD"]({**member, "guild_id": str(GUILD_ID)})
        if "kill" in command:
            reply = await nc.kill(channel=int(command["kill"]))
            emit({"kill_reply": reply["data"]["embeds"][0]["title"]})
        if "respond" in command:
            reply = await nc.respond(command["prompt"], channel=int(command["respond"]))
            emit({"respond_reply": reply["data"]["embeds"][0]["title"]})


if __name__ == "__main__":
    seeds = json.loads(Path(sys.argv[2]).read_text()) if len(sys.argv) > 2 else []
    asyncio.run(main(sys.argv[1], seeds))
