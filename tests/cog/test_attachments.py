"""What the model is shown of attachments, through the cog in a bot of each library, on each
library's own `Attachment`.

The attachment bytes come from a local HTTP server standing in for Discord's CDN; the LLM
server records what each model was sent.
"""

from __future__ import annotations

import asyncio
import base64
import re
from pathlib import Path

import pytest

from tests.support.attachments import SEEING, images_sent, last_user_content, user_texts
from tests.support.bots import ChatBot, OpenBot
from tests.support.cog_settings import chain_for, settings_for
from tests.support.files import PIXEL, PIXEL_B64, FileServer
from tests.support.gemini_wire import response, text_part
from tests.support.llm_server import LLMServer, Reply, sse
from tests.support.scripts import answer, http_error, stalled_after
from tests.support.world import CHANNEL_ID
from tomori.prompt.vision import UNSEEN_IMAGES_NOTICE


@pytest.fixture
async def bot(tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot) -> ChatBot:
    return await open_bot(settings_for(tmp_path), chain_for(llm_server, SEEING))


async def test_an_image_reaches_the_model_inline_with_its_bytes_and_type(
    bot: ChatBot, llm_server: LLMServer, files: FileServer
) -> None:
    llm_server.script(answer("A single pixel."))
    await bot.say(
        f"{bot.mention()} what is this?",
        attachments=[files.attachment("dot.png", PIXEL, "image/png")],
    )
    await bot.settled()
    assert [m.content for m in await bot.messages()] == ["A single pixel."]
    assert last_user_content(0, llm_server) == [
        {"type": "text", "text": "alice: @Tomori what is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL_B64}"}},
    ]
    assert files.fetched["dot.png"] == 1


async def test_gemini_is_sent_the_image_inline_with_the_attachments_own_type(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server, "gemini:test-model+vision"))
    llm_server.script(Reply(body=[sse(response(text_part("A pixel."), finish="STOP"))]))
    webp = b"RIFF\x1a\x00\x00\x00WEBPVP8L" + bytes(range(14))  # declared webp, served as such
    await bot.say(
        f"{bot.mention()} look", attachments=[files.attachment("photo.webp", webp, "image/webp")]
    )
    await bot.settled()
    assert await bot.contents() == ["A pixel."]
    parts = llm_server.requests[0].body["contents"][-1]["parts"]
    inline = [part.get("inlineData") or part.get("inline_data") for part in parts[1:]]
    assert [sorted(blob.values()) for blob in inline] == [
        sorted([base64.b64encode(webp).decode(), "image/webp"])
    ]


async def test_an_image_over_the_size_limit_is_not_read_and_the_model_is_told(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    bot = await open_bot(
        settings_for(tmp_path, max_image_bytes=1_000), chain_for(llm_server, SEEING)
    )
    llm_server.script(answer("I cannot see it."))
    big = files.attachment("huge.png", PIXEL, "image/png", size=25_000_000)
    bigger = files.attachment("huge.jpg", PIXEL, "image/jpeg", size=12_000_000)
    await bot.say(f"{bot.mention()} see?", attachments=[big, bigger])
    await bot.settled()
    assert files.fetched["huge.png"] == 0  # its declared size was enough to leave it out
    assert files.fetched["huge.jpg"] == 0
    assert images_sent(0, llm_server) == []
    notice = user_texts(0, llm_server)[-1]
    assert "alice's image huge.png (25.0 MB) is larger than the 1.0 kB allowed" in notice
    assert "alice's image huge.jpg (12.0 MB) is larger" in notice
    assert await bot.contents() == ["I cannot see it."]


async def test_an_image_larger_than_declared_is_cut_off_at_the_limit_and_told(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    bot = await open_bot(settings_for(tmp_path, max_image_bytes=100), chain_for(llm_server, SEEING))
    llm_server.script(answer("Too big."))
    await bot.say(
        f"{bot.mention()} see?",
        attachments=[files.attachment("liar.png", b"\x89PNG" * 1_000, "image/png", size=50)],
    )
    await bot.settled()
    assert images_sent(0, llm_server) == []
    assert (
        "alice's image liar.png is larger than the 100 bytes allowed"
        in user_texts(0, llm_server)[-1]
    )


async def test_a_text_file_arrives_under_its_name_and_a_long_one_is_cut_with_a_marker(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    bot = await open_bot(
        settings_for(tmp_path, max_attachment_chars=50), chain_for(llm_server, SEEING)
    )
    llm_server.script(answer("Read them."))
    code = "def héllo():\n    return 1\n"
    log_text = "line\n" * 100
    await bot.say(
        f"{bot.mention()} review",
        attachments=[
            files.attachment("hello.py", code.encode(), None),  # no type: the name says text
            files.attachment("app.log", log_text.encode(), "text/plain; charset=utf-8"),
        ],
    )
    await bot.settled()
    sent = last_user_content(0, llm_server)
    body = (  # every line of the message and its files is Alice's: indented past her name
        f"review\n[file hello.py]\n{code}\n[end of hello.py]\n"
        f"[file app.log]\n{log_text[:50]}\n"
        f"[... app.log is cut here: only its first 50 characters are shown]\n[end of app.log]"
    )
    assert sent == "alice: @Tomori " + body.replace("\n", "\n  ")


async def test_a_markdown_file_arrives_and_a_pdf_is_named(
    bot: ChatBot, llm_server: LLMServer, files: FileServer
) -> None:
    llm_server.script(answer("Read."))
    await bot.say(
        f"{bot.mention()} look",
        attachments=[
            files.attachment("notes.md", b"# Notes\nremember the milk", "text/markdown"),
            files.attachment("report.pdf", b"%PDF-1.7", "application/pdf"),
        ],
    )
    await bot.settled()
    sent = last_user_content(0, llm_server)
    assert sent.endswith(
        "look\n  [file notes.md]\n  # Notes\n  remember the milk\n  [end of notes.md]\n"
        "  [a file report.pdf was attached]"
    )


async def test_other_files_stickers_and_custom_emoji_are_named(
    bot: ChatBot, llm_server: LLMServer, files: FileServer
) -> None:
    llm_server.script(answer("Noted."))
    await bot.say(
        f"{bot.mention()} <:blobwave:123456789012345678> read this",
        attachments=[files.attachment("report.pdf", b"%PDF-1.7", "application/pdf")],
        extra={"sticker_items": [{"id": "1", "name": "Party Parrot", "format_type": 1}]},
    )
    await bot.settled()
    assert files.fetched["report.pdf"] == 0
    assert last_user_content(0, llm_server) == (
        "alice: @Tomori :blobwave: read this\n  [a file report.pdf was attached]\n"
        "  [sticker: Party Parrot]"
    )


async def test_a_link_to_a_picture_is_shown_as_the_image_discords_proxy_serves(
    bot: ChatBot, llm_server: LLMServer, files: FileServer
) -> None:
    llm_server.script(answer("Nice pixel."))
    files.attachment("proxied.png", PIXEL, "image/png")
    embed = {
        "type": "image",
        "url": "https://example.com/pic.png",
        "thumbnail": {"url": "https://example.com/pic.png", "proxy_url": files.url("proxied.png")},
    }
    await bot.say(f"{bot.mention()} https://example.com/pic.png", extra={"embeds": [embed]})
    await bot.settled()
    assert images_sent(0, llm_server) == [f"data:image/png;base64,{PIXEL_B64}"]


async def test_the_newest_images_are_sent_the_triggers_first_and_the_rest_told(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    bot = await open_bot(settings_for(tmp_path, max_images=2), chain_for(llm_server, SEEING))
    old = files.attachment("old.png", PIXEL + b"old", "image/png")
    newer = files.attachment("newer.png", PIXEL + b"newer", "image/png")
    own = files.attachment("own.gif", b"GIF89a own", "image/gif")
    await bot.say("first", attachments=[old])
    await bot.say("second", attachments=[newer])
    llm_server.script(answer("Two of three."))
    await bot.say(f"{bot.mention()} and mine", attachments=[own])
    await bot.settled()
    assert sorted(images_sent(0, llm_server)) == sorted(
        f"data:image/{kind};base64,{base64.b64encode(data).decode()}"
        for kind, data in (("png", PIXEL + b"newer"), ("gif", b"GIF89a own"))
    )
    assert files.fetched["old.png"] == 0
    assert (
        "alice's image old.png is left out: only the 2 newest images"
        in user_texts(0, llm_server)[-1]
    )


async def test_a_file_that_cannot_be_read_is_told_and_the_turn_is_answered(
    bot: ChatBot, llm_server: LLMServer, files: FileServer
) -> None:
    gone = files.attachment("gone.png", PIXEL, "image/png")
    del files.files["gone.png"]  # the CDN answers 404
    llm_server.script(answer("It did not load."))
    await bot.say(f"{bot.mention()} see?", attachments=[gone])
    await bot.settled()
    assert "alice's image gone.png could not be read" in user_texts(0, llm_server)[-1]
    assert await bot.contents() == ["It did not load."]


async def test_a_model_without_vision_gets_the_text_and_a_notice_and_still_answers(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server, "openai:text-only"))
    files.hanging.add("a.png")  # read, it would hold the turn
    llm_server.script(answer("I cannot view images."))
    await bot.say(
        f"{bot.mention()} what?", attachments=[files.attachment("a.png", PIXEL, "image/png")]
    )
    async with asyncio.timeout(3):
        await bot.settled()
    assert files.fetched["a.png"] == 0
    assert images_sent(0, llm_server) == []
    # the notice is sent in the user's turn, after the message (one turn per role)
    assert user_texts(0, llm_server)[-1] == "\n".join(
        ["alice: @Tomori what?", UNSEEN_IMAGES_NOTICE.format(count="an image")]
    )
    assert [m.content for m in await bot.messages()] == ["I cannot view images."]


async def test_a_400_naming_images_is_retried_once_without_them(
    bot: ChatBot, llm_server: LLMServer, files: FileServer
) -> None:
    refusal = Reply(
        status=400, json_body={"error": {"message": "image input is not supported by this model"}}
    )
    llm_server.script(refusal, answer("Text only, then."))
    await bot.say(
        f"{bot.mention()} hm", attachments=[files.attachment("a.png", PIXEL, "image/png")]
    )
    await bot.settled()
    assert len(llm_server.requests) == 2
    assert [len(images_sent(n, llm_server)) for n in range(2)] == [1, 0]
    assert user_texts(1, llm_server)[-1] == "\n".join(
        ["alice: @Tomori hm", UNSEEN_IMAGES_NOTICE.format(count="an image")]
    )
    assert [m.content for m in await bot.messages()] == ["Text only, then."]
    assert await bot.embeds() == []


async def test_a_400_about_something_else_is_not_retried(
    bot: ChatBot, llm_server: LLMServer, files: FileServer
) -> None:
    llm_server.script(http_error(400))
    await bot.say(
        f"{bot.mention()} hm", attachments=[files.attachment("a.png", PIXEL, "image/png")]
    )
    await bot.settled()
    assert len(llm_server.requests) == 1


async def test_images_are_read_once_per_turn_even_when_a_fallback_answers(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    models = "openai:first+vision,openai:second+vision"
    bot = await open_bot(settings_for(tmp_path), chain_for(llm_server, models))
    llm_server.script(http_error(400), answer("The fallback saw it."))
    await bot.say(
        f"{bot.mention()} see?", attachments=[files.attachment("a.png", PIXEL, "image/png")]
    )
    await bot.settled()
    assert [request.body["model"] for request in llm_server.requests] == ["first", "second"]
    assert images_sent(0, llm_server) == images_sent(1, llm_server) != []
    assert files.fetched["a.png"] == 1
    assert await bot.contents() == ["The fallback saw it."]


async def test_with_no_characters_allowed_a_text_file_is_named_and_not_read(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    bot = await open_bot(
        settings_for(tmp_path, max_attachment_chars=0), chain_for(llm_server, SEEING)
    )
    llm_server.script(answer("Named only."))
    await bot.say(
        f"{bot.mention()} hi", attachments=[files.attachment("a.txt", b"secret", "text/plain")]
    )
    await bot.settled()
    assert files.fetched["a.txt"] == 0
    assert last_user_content(0, llm_server) == "alice: @Tomori hi\n  [a file a.txt was attached]"


async def test_a_hundred_files_in_the_history_send_the_newest_within_bounds_each_read_once(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    # A model whose context holds them all: the files' own bounds are what is counted here.
    settings = settings_for(tmp_path, context_tokens=1_000_000)
    bot = await open_bot(settings, chain_for(llm_server, SEEING))
    for batch in range(10):  # ten messages of ten files, 15,000 characters each
        attached = [
            files.attachment(f"f{batch}-{n}.txt", f"f{batch}-{n} ".encode() * 3_000, "text/plain")
            for n in range(10)
        ]
        await bot.say(f"batch {batch}", attachments=attached)
    llm_server.script(answer("Read."), answer("Again."))
    for question in ("summarise the files", "and once more?"):
        await bot.say(f"{bot.mention()} {question}")
        await bot.settled()
    for turn in (0, 1):
        sent = "\n".join(user_texts(turn, llm_server))
        shown = re.findall(r"\[file (f\d-\d\.txt)\]", sent)
        assert shown == [f"f9-{n}.txt" for n in range(7)]  # the newest, within 100,000 chars
        assert "f9-6.txt is cut here: only its first 10000 characters are shown" in sent
        assert len(sent) < 110_000  # not the 1.5 million characters of every file
        assert "alice's file f9-9.txt is left out: the newer files shown fill" in sent
        assert "alice's file f8-0.txt is left out: only the 10 newest text files" in sent
        assert "and 73 more files, left out" in sent  # 93 left out, the first 20 named
    assert set(files.fetched) == {f"f9-{n}.txt" for n in range(10)}
    assert set(files.fetched.values()) == {1}  # read for the first question, kept for the next


async def test_images_of_turns_at_once_are_held_within_a_budget_and_the_rest_told(
    tmp_path: Path, llm_server: LLMServer, open_bot: OpenBot, files: FileServer
) -> None:
    settings = settings_for(tmp_path, image_bytes_in_flight=150)
    bot = await open_bot(settings, chain_for(llm_server, SEEING))
    image = {name: PIXEL + name.encode() * 10 for name in ("a", "b", "c")}  # about 100 bytes
    llm_server.script(stalled_after("Looking.\n\n"), answer("Without it."), answer("With it."))
    await bot.say(
        f"{bot.mention()} a", attachments=[files.attachment("a.png", image["a"], "image/png")]
    )
    async with asyncio.timeout(5):
        await llm_server.request_arrived.wait()  # the first turn holds its image, answering
    other = CHANNEL_ID + 1
    attached = [files.attachment("b.png", image["b"], "image/png")]
    await bot.say(f"{bot.mention()} b", channel=other, attachments=attached)
    await bot.settled(other)
    assert images_sent(1, llm_server) == []  # no room beside the first turn's image
    told = user_texts(1, llm_server)[-1]
    assert "alice's image b.png is left out: the bot holds as many images as it may" in told
    await bot.kill()
    await bot.settled()
    attached = [files.attachment("c.png", image["c"], "image/png")]
    await bot.say(f"{bot.mention()} c", channel=other, attachments=attached)
    await bot.settled(other)
    sent = f"data:image/png;base64,{base64.b64encode(image['c']).decode()}"
    assert images_sent(2, llm_server) == [sent]  # the turns that ended gave theirs back
    assert await bot.contents(other) == ["Without it.", "With it."]
