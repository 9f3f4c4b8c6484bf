"""Attachments that misbehave, through the cog in both libraries: a CDN that stops answering,
a file whose bytes are not what its type or name says, names that would break a marker.

A turn reading such a file must still show "typing", stop at once on /kill, and answer; a file
that failed or hung is not waited on again by the turns after it; what the model is sent is
what the bytes are, and what the log keeps never holds a signed URL.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from pathlib import Path

import pytest

from tests.support.attachments import (
    SEEING,
    OpenDpy,
    images_sent,
    last_user_content,
    user_texts,
)
from tests.support.bots import OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.files import PIXEL, PIXEL_B64, FileServer
from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import NextcordBot, OpenNextcord
from tests.support.scripts import answer
from tests.support.world import CHANNEL_ID
from tomori_cog.reading import fetch, unreadable
from tomori_cog.reading.unreadable import UnreadableFiles

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

JPEG = b"\xff\xd8\xff\xe0 a jpeg's first bytes"


async def until_fetched(files: FileServer, name: str) -> None:
    """Wait until the cog has asked the file server for `name`."""
    async with asyncio.timeout(5):
        while files.fetched[name] == 0:  # noqa: ASYNC110
            await asyncio.sleep(0.01)


@pytest.fixture
async def nc(tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord) -> NextcordBot:
    return await open_nextcord(settings_for(tmp_path), chain_for(llm_server, SEEING))


# -- a CDN that stops answering -------------------------------------------------------------


async def test_kill_stops_a_turn_waiting_on_a_download_at_once_and_the_next_is_answered_at_once(
    tmp_path: Path,
    llm_server: LLMServer,
    open_bot: OpenBot,
    files: FileServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(unreadable, "HUNG_AFTER_S", 0.2)
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server, SEEING))
    files.hanging.add("hang.png")
    await bot.say(
        f"{bot.mention()} look", attachments=[files.attachment("hang.png", PIXEL, "image/png")]
    )
    await until_fetched(files, "hang.png")
    await asyncio.sleep(0.3)  # the user waits on it a while, then kills
    assert set(bot.typing) == {CHANNEL_ID}  # the channel showed the bot at work while it read
    reply = await bot.kill()
    assert "stopped" in str(reply).lower()
    async with asyncio.timeout(3):  # not the download's own deadline
        await bot.settled()
    assert llm_server.requests == []
    llm_server.script(answer("Here now."), answer("Still here."))
    await bot.say(f"{bot.mention()} hello again")
    async with asyncio.timeout(2):  # not the download's deadline again (10 s)
        await bot.settled()
    await bot.say(f"{bot.mention()} and again")
    async with asyncio.timeout(2):
        await bot.settled()
    assert await bot.contents() == ["Here now.", "Still here."]
    for turn in (0, 1):
        assert "alice's image hang.png could not be read" in user_texts(turn, llm_server)[-1]
    assert files.fetched["hang.png"] == 1  # neither later turn read it again
    assert f"127.0.0.1:{files.port}/hang.png: stopped after" in caplog.text


async def test_a_file_that_could_not_be_read_is_not_read_again_for_a_while(
    tmp_path: Path,
    llm_server: LLMServer,
    open_bot: OpenBot,
    files: FileServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(fetch, "READ_TIMEOUT_S", 0.3)
    monkeypatch.setattr(unreadable, "FORGET_AFTER_S", 1.0)
    caplog.set_level(logging.INFO, "tomori_cog.reading")
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server, SEEING))
    files.hanging.add("slow.png")
    llm_server.script(answer("It did not load."), answer("Still not."), answer("A pixel."))
    first = await bot.say(
        f"{bot.mention()} see", attachments=[files.attachment("slow.png", PIXEL, "image/png")]
    )
    await bot.settled()
    await bot.say(f"{bot.mention()} and now?")
    await bot.settled()
    assert files.fetched["slow.png"] == 1  # the second turn did not wait on it again
    assert f"not reading slow.png of message {first.id}: its read failed" in caplog.text
    files.hanging.discard("slow.png")  # the CDN answers again
    await asyncio.sleep(1.0)  # past FORGET_AFTER_S: the next turn tries it again
    await bot.say(f"{bot.mention()} now?")
    await bot.settled()
    assert files.fetched["slow.png"] == 2
    assert await bot.contents() == ["It did not load.", "Still not.", "A pixel."]
    for turn in (0, 1):
        assert "alice's image slow.png could not be read" in user_texts(turn, llm_server)[-1]
    assert images_sent(2, llm_server) == [f"data:image/png;base64,{PIXEL_B64}"]


def test_a_file_is_known_by_its_path_a_quick_stop_is_not_held_against_it_and_a_thousand_kept() -> (
    None
):
    files = UnreadableFiles()
    files.failed("https://cdn.example/attachments/1/2/a.png?ex=1&hm=first")
    assert files.failed_lately("https://cdn.example/attachments/1/2/a.png?ex=2&hm=refreshed")
    assert files.failed_lately("https://cdn.example/attachments/1/3/a.png") is None
    assert not files.stopped("https://cdn.example/b.png", unreadable.HUNG_AFTER_S / 2)
    assert files.failed_lately("https://cdn.example/b.png") is None
    assert files.stopped("https://cdn.example/b.png", unreadable.HUNG_AFTER_S)
    assert files.failed_lately("https://cdn.example/b.png") is not None
    for number in range(unreadable.MOST_REMEMBERED):
        files.failed(f"https://cdn.example/{number}.png")
    assert files.failed_lately("https://cdn.example/attachments/1/2/a.png") is None  # the oldest
    assert files.failed_lately("https://cdn.example/0.png") is not None


async def test_a_download_past_its_deadline_is_told_and_logged_with_its_duration(
    nc: NextcordBot,
    llm_server: LLMServer,
    files: FileServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(fetch, "READ_TIMEOUT_S", 0.2)
    files.hanging.add("slow.png")
    llm_server.script(answer("It did not load."))
    nc.say(f"{nc.mention()} see", attachments=[files.attachment("slow.png", PIXEL, "image/png")])
    with caplog.at_level(logging.INFO):
        await nc.settled()
    assert "alice's image slow.png could not be read" in user_texts(0, llm_server)[-1]
    assert f"127.0.0.1:{files.port}/slow.png: no answer within 0.2s" in caplog.text


async def test_a_failed_download_is_logged_without_the_signed_query(
    nc: NextcordBot, llm_server: LLMServer, files: FileServer, caplog: pytest.LogCaptureFixture
) -> None:
    gone = files.attachment("gone.png", PIXEL, "image/png")
    del files.files["gone.png"]  # the server answers 404
    gone["url"] += "?ex=67&hm=secret-signature"
    llm_server.script(answer("Gone."))
    nc.say(f"{nc.mention()} see", attachments=[gone])
    await nc.settled()
    assert "alice's image gone.png could not be read" in user_texts(0, llm_server)[-1]
    assert "gone.png of message" in caplog.text
    assert f"127.0.0.1:{files.port}/gone.png: HTTP 404" in caplog.text
    assert "secret-signature" not in caplog.text


# -- no model that sees images ---------------------------------------------------------------


async def test_the_start_up_line_names_the_models_that_see_images(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    caplog: pytest.LogCaptureFixture,
) -> None:
    models = "openai:test-model+vision,openai:text-only"
    with caplog.at_level(logging.INFO):
        nc = await open_nextcord(settings_for(tmp_path), chain_for(llm_server, models))
        llm_server.script(answer("Hi."))
        nc.say(f"{nc.mention()} hi")
        await nc.settled()
    assert "tomori serving with openai:test-model+vision, openai:text-only" in caplog.text


# -- the bytes decide ------------------------------------------------------------------------


async def test_an_image_is_sent_under_the_type_its_bytes_say_and_a_fake_one_is_told(
    nc: NextcordBot, llm_server: LLMServer, files: FileServer, caplog: pytest.LogCaptureFixture
) -> None:
    llm_server.script(answer("One picture."))
    nc.say(
        f"{nc.mention()} two pictures?",
        attachments=[
            files.attachment("photo.png", JPEG, "image/png"),  # a JPEG under a PNG's type
            files.attachment("fake.png", b"<html>not an image</html>", "image/png"),
        ],
    )
    await nc.settled()
    assert images_sent(0, llm_server) == [
        f"data:image/jpeg;base64,{base64.b64encode(JPEG).decode()}"
    ]
    assert (
        "alice's image fake.png could not be read: it is not an image"
        in (user_texts(0, llm_server)[-1])
    )
    assert "fake.png of message" in caplog.text


async def test_an_image_is_sent_under_the_type_its_bytes_say_discordpy(
    open_dpy: OpenDpy, llm_server: LLMServer, files: FileServer
) -> None:
    dpy = await open_dpy()
    llm_server.script(answer("A pixel."))
    await dpy.say(
        f"{dpy.mention()} see", attachments=[files.attachment("dot.jpg", PIXEL, "image/jpeg")]
    )
    await dpy.settled()
    assert images_sent(0, llm_server) == [f"data:image/png;base64,{PIXEL_B64}"]


async def test_a_binary_file_named_as_text_is_named_not_read(
    nc: NextcordBot, llm_server: LLMServer, files: FileServer
) -> None:
    llm_server.script(answer("Noted."))
    binary = b"PK\x03\x04\x00\x00 zipped bytes \x00\x01\x02"
    nc.say(
        f"{nc.mention()} read", attachments=[files.attachment("notes.txt", binary, "text/plain")]
    )
    await nc.settled()
    assert last_user_content(0, llm_server) == (
        "alice: @Tomori read\n  [a file notes.txt was attached]"
    )


async def test_a_binary_file_named_as_text_is_named_not_read_discordpy(
    open_dpy: OpenDpy, llm_server: LLMServer, files: FileServer
) -> None:
    dpy = await open_dpy()
    llm_server.script(answer("Noted."))
    binary = bytes(range(128, 256)) * 4  # no NUL, but no UTF-8 either
    await dpy.say(f"{dpy.mention()} read", attachments=[files.attachment("data.log", binary, None)])
    await dpy.settled()
    assert last_user_content(0, llm_server).endswith("read\n  [a file data.log was attached]")


# -- names and settings the notes must not garble ---------------------------------------------


async def test_a_bracket_in_a_file_name_does_not_end_its_marker(
    nc: NextcordBot, llm_server: LLMServer, files: FileServer
) -> None:
    llm_server.script(answer("Read."))
    nc.say(
        f"{nc.mention()} read",
        attachments=[files.attachment("a]b.txt", b"hello", "text/plain")],
    )
    await nc.settled()
    assert last_user_content(0, llm_server).endswith("[file a)b.txt]\n  hello\n  [end of a)b.txt]")


async def test_no_images_at_max_images_zero_is_said_as_such(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord, files: FileServer
) -> None:
    nc = await open_nextcord(settings_for(tmp_path, max_images=0), chain_for(llm_server, SEEING))
    llm_server.script(answer("None seen."))
    nc.say(f"{nc.mention()} see", attachments=[files.attachment("a.png", PIXEL, "image/png")])
    await nc.settled()
    told = user_texts(0, llm_server)[-1]
    assert "alice's image a.png is left out: this bot sends no images to models" in told
    assert "only the 0 newest" not in told
