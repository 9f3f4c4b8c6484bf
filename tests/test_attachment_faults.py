"""Attachments that misbehave, through the cog in both libraries: a CDN that stops answering,
a file whose bytes are not what its type or name says, names that would break a marker.

A turn reading such a file must still show "typing", stop at once on /kill, and answer; what
the model is sent is what the bytes are, and what the log keeps never holds a signed URL.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.support.cog_settings import settings_for
from tests.support.files import PIXEL, FileServer
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import NextcordBot, OpenNextcord
from tests.support.scripts import answer
from tests.test_cog_attachments import chain, files
from tests.test_cog_attachments_discordpy import OpenDpy, open_dpy

__all__ = ["files", "open_dpy"]  # the fixtures, shared with the other attachment tests

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


async def until_fetched(files: FileServer, name: str) -> None:
    """Wait until the cog has asked the file server for `name`."""
    async with asyncio.timeout(5):
        while files.fetched[name] == 0:  # noqa: ASYNC110
            await asyncio.sleep(0.01)


@pytest.fixture
async def nc(tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord) -> NextcordBot:
    return await open_nextcord(settings_for(tmp_path), chain(llm_server))


# -- a CDN that stops answering -------------------------------------------------------------


async def test_kill_stops_a_turn_waiting_on_a_download_at_once_and_the_next_is_answered(
    nc: NextcordBot, llm_server: LLMServer, files: FileServer
) -> None:
    files.hanging.add("hang.png")
    nc.say(f"{nc.mention()} look", attachments=[files.attachment("hang.png", PIXEL, "image/png")])
    await until_fetched(files, "hang.png")
    assert nc.discord.typing >= 1  # the channel shows the bot at work while it reads
    reply = await nc.kill()
    assert "stopped" in str(reply).lower()
    async with asyncio.timeout(3):  # not the download's own deadline
        await nc.settled()
    assert llm_server.requests == []
    llm_server.script(answer("Here now."))
    nc.say(f"{nc.mention()} hello again")
    await nc.settled()
    assert nc.discord.contents() == ["Here now."]


async def test_kill_stops_a_turn_waiting_on_a_download_at_once_discordpy(
    open_dpy: OpenDpy, llm_server: LLMServer, files: FileServer
) -> None:
    dpy = await open_dpy()
    files.hanging.add("hang.png")
    await dpy.say(
        f"{dpy.mention()} look", attachments=[files.attachment("hang.png", PIXEL, "image/png")]
    )
    await until_fetched(files, "hang.png")
    await dpy.kill()
    async with asyncio.timeout(3):
        await dpy.settled()
    assert llm_server.requests == []
    llm_server.script(answer("Here now."))
    await dpy.say(f"{dpy.mention()} hello again")
    await dpy.settled()
    assert [m.content for m in await dpy.bot_messages()] == ["Here now."]
