"""Attachments that misbehave, through the cog in both libraries: a CDN that stops answering,
a file whose bytes are not what its type or name says, names that would break a marker.

A turn reading such a file must still show "typing", stop at once on /kill, and answer; what
the model is sent is what the bytes are, and what the log keeps never holds a signed URL.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from tests.support.cog_settings import settings_for
from tests.support.files import PIXEL, FileServer
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import NextcordBot, OpenNextcord
from tests.support.scripts import answer
from tests.test_cog_attachments import chain, files, images_sent, user_texts
from tests.test_cog_attachments_discordpy import OpenDpy, open_dpy
from tomori.vision import UNSEEN_IMAGES_NOTICE

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


# -- no model that sees images ---------------------------------------------------------------


async def test_a_chain_without_vision_reads_no_image_and_the_model_is_told(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord, files: FileServer
) -> None:
    nc = await open_nextcord(settings_for(tmp_path), chain(llm_server, "openai:text-only"))
    files.hanging.add("a.png")  # read, it would hold the turn
    llm_server.script(answer("No eyes here."))
    nc.say(f"{nc.mention()} what?", attachments=[files.attachment("a.png", PIXEL, "image/png")])
    async with asyncio.timeout(3):
        await nc.settled()
    assert files.fetched["a.png"] == 0
    assert images_sent(0, llm_server) == []
    assert user_texts(0, llm_server)[-1] == UNSEEN_IMAGES_NOTICE.format(count="an image")
    assert nc.discord.contents() == ["No eyes here."]


async def test_a_chain_without_vision_reads_no_image_discordpy(
    open_dpy: OpenDpy, llm_server: LLMServer, files: FileServer
) -> None:
    dpy = await open_dpy(models="openai:text-only")
    llm_server.script(answer("No eyes here."))
    await dpy.say(
        f"{dpy.mention()} what?", attachments=[files.attachment("a.png", PIXEL, "image/png")]
    )
    await dpy.settled()
    assert files.fetched["a.png"] == 0
    assert user_texts(0, llm_server)[-1] == UNSEEN_IMAGES_NOTICE.format(count="an image")


async def test_the_start_up_line_names_the_models_that_see_images(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    caplog: pytest.LogCaptureFixture,
) -> None:
    models = "openai:test-model+vision,openai:text-only"
    with caplog.at_level(logging.INFO):
        nc = await open_nextcord(settings_for(tmp_path), chain(llm_server, models))
        llm_server.script(answer("Hi."))
        nc.say(f"{nc.mention()} hi")
        await nc.settled()
    assert "tomori serving with openai:test-model+vision, openai:text-only" in caplog.text
