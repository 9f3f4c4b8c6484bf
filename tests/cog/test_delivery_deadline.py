"""An answer Discord does not take in time: the rest is dropped, and a direct asker is told.

Once the model has finished, each send still to land waits at most `TOMORI_DELIVERY_TIMEOUT_MS`
(Discord rate limiting the bot, a slow network). Past it the rest of the answer is dropped with
a log line; the person who asked directly hears that the answer is cut short, so nothing is lost
in silence, while a channel the bot answers on its own is not told.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import OpenNextcord
from tests.support.scripts import answer
from tomori.delivery.notices import NOT_DELIVERED

HELD_S = 30.0
"""How long Discord holds the answer's second message: far past the deadline."""


def held_second_part(body: dict[str, Any]) -> float:
    return HELD_S if "second part" in (body.get("content") or "") else 0.0


async def test_an_answer_discord_did_not_take_in_time_is_told_to_the_asker(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    settings = settings_for(tmp_path, delivery_timeout_ms=500)
    nc = await open_nextcord(settings, chain_for(llm_server))
    nc.discord.send_delay = held_second_part
    llm_server.script(answer("The first part.\n\n" + "x" * 1990 + "\n\nThe second part."))
    started = time.monotonic()
    nc.say(f"{nc.mention()} tell me")
    await nc.settled()
    assert time.monotonic() - started < HELD_S / 3  # the deadline ended the wait
    assert nc.discord.contents()[0].startswith("The first part.")
    assert nc.discord.embeds() == [NOT_DELIVERED.title]
