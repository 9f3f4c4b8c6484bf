"""What the model is shown of attachments, through the cog in a real discord.py bot (dpytest).

The same rules as tests/test_cog_attachments.py, on the other library's own `Attachment`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.attachments import OpenDpy, images_sent, last_user_content, user_texts
from tests.support.cog_settings import settings_for
from tests.support.files import PIXEL, PIXEL_B64, FileServer
from tests.support.llm_server import LLMServer, Reply
from tests.support.scripts import answer
from tomori.prompt.vision import UNSEEN_IMAGES_NOTICE

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


async def test_an_image_reaches_the_model_inline_with_its_bytes_and_type(
    open_dpy: OpenDpy, llm_server: LLMServer, files: FileServer
) -> None:
    dpy = await open_dpy()
    llm_server.script(answer("A single pixel."))
    await dpy.say(
        f"{dpy.mention()} what is this?",
        attachments=[files.attachment("dot.png", PIXEL, "image/png")],
    )
    await dpy.settled()
    assert [m.content for m in await dpy.bot_messages()] == ["A single pixel."]
    content = last_user_content(0, llm_server)
    assert content[1:] == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL_B64}"}}
    ]
    assert files.fetched["dot.png"] == 1


async def test_a_text_file_arrives_and_a_pdf_is_named(
    open_dpy: OpenDpy, llm_server: LLMServer, files: FileServer
) -> None:
    dpy = await open_dpy()
    llm_server.script(answer("Read."))
    await dpy.say(
        f"{dpy.mention()} look",
        attachments=[
            files.attachment("notes.md", b"# Notes\nremember the milk", "text/markdown"),
            files.attachment("report.pdf", b"%PDF-1.7", "application/pdf"),
        ],
    )
    await dpy.settled()
    sent = last_user_content(0, llm_server)
    assert sent.endswith(
        "look\n[file notes.md]\n# Notes\nremember the milk\n[end of notes.md]\n"
        "[a file report.pdf was attached]"
    )


async def test_an_oversized_image_is_skipped_with_a_notice(
    open_dpy: OpenDpy, tmp_path: Path, llm_server: LLMServer, files: FileServer
) -> None:
    dpy = await open_dpy(settings_for(tmp_path, max_image_bytes=1_000))
    llm_server.script(answer("Too big for me."))
    name = dpy.member.display_name
    big = files.attachment("huge.jpg", PIXEL, "image/jpeg", size=12_000_000)
    await dpy.say(f"{dpy.mention()} see?", attachments=[big])
    await dpy.settled()
    assert images_sent(0, llm_server) == []
    assert files.fetched["huge.jpg"] == 0
    assert f"{name}'s image huge.jpg (12.0 MB) is larger" in user_texts(0, llm_server)[-1]


async def test_a_model_without_vision_gets_text_only_and_still_answers(
    open_dpy: OpenDpy, llm_server: LLMServer, files: FileServer
) -> None:
    dpy = await open_dpy(models="openai:text-only")
    llm_server.script(answer("No eyes here."))
    await dpy.say(
        f"{dpy.mention()} what?", attachments=[files.attachment("a.png", PIXEL, "image/png")]
    )
    await dpy.settled()
    assert files.fetched["a.png"] == 0
    assert images_sent(0, llm_server) == []
    assert user_texts(0, llm_server)[-1] == UNSEEN_IMAGES_NOTICE.format(count="an image")
    assert [m.content for m in await dpy.bot_messages()] == ["No eyes here."]


async def test_a_400_naming_images_is_retried_once_without_them(
    open_dpy: OpenDpy, llm_server: LLMServer, files: FileServer
) -> None:
    dpy = await open_dpy()
    refusal = Reply(status=400, json_body={"error": {"message": "this model has no vision"}})
    llm_server.script(refusal, answer("Without the picture, then."))
    await dpy.say(
        f"{dpy.mention()} hm", attachments=[files.attachment("a.png", PIXEL, "image/png")]
    )
    await dpy.settled()
    assert [len(images_sent(n, llm_server)) for n in range(2)] == [1, 0]
    assert [m.content for m in await dpy.bot_messages()] == ["Without the picture, then."]
