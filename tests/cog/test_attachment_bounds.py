"""Which images one request carries: the newest within `TOMORI_MAX_IMAGES`, none over
`TOMORI_MAX_IMAGE_BYTES`, and every image left out named to the model, whatever the mix.

Messages here are plain objects with the attributes both libraries' messages have; the bytes
come over HTTP from the local file server, as they would from Discord's CDN.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.files import FileServer
from tomori.config.settings import Settings
from tomori_cog.reading.attachments import read_attachments
from tomori_cog.reading.file_cache import FileCache
from tomori_cog.reading.image_bytes import ImageBytes
from tomori_cog.reading.unreadable import UnreadableFiles

PNG = b"\x89PNG\r\n\x1a\n"
"""A PNG's signature: each image here is it, then its own name."""
LIMIT = 100
"""TOMORI_MAX_IMAGE_BYTES here: declared sizes fall on both sides of it."""

sizes = st.integers(min_value=1, max_value=2 * LIMIT)
conversations = st.lists(st.lists(sizes, max_size=3), min_size=1, max_size=5)


async def _sent_and_told(
    conversation: list[list[int]], max_images: int
) -> tuple[list[bytes], list[str], list[str]]:
    """The image bytes sent (in message order), every image's name, and the notices' text."""
    files = FileServer()
    await files.start()
    try:
        messages: list[Any] = []
        names: list[str] = []
        for number, declared in enumerate(conversation):
            attachments = []
            for position, size in enumerate(declared):
                name = f"m{number}-{position}.png"
                names.append(name)
                payload = files.attachment(name, PNG + name.encode(), "image/png", size=size)
                attachments.append(SimpleNamespace(**payload))
            author = SimpleNamespace(id=number, display_name=f"user{number}")
            messages.append(
                SimpleNamespace(id=number, author=author, attachments=attachments, embeds=[])
            )
        setup = Settings(db_path=Path("unused.db"), max_images=max_images, max_image_bytes=LIMIT)
        attached = await read_attachments(
            messages,
            setup,
            me=None,
            images=True,
            unreadable=UnreadableFiles(),
            cache=FileCache(0),
            hold=ImageBytes(setup.image_bytes_in_flight).hold(),
        )
        sent = [image.data.removeprefix(PNG) for m in messages for image in attached.of(m).images]
        return sent, names, [notice.text for notice in attached.notices]
    finally:
        await files.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations, st.integers(min_value=0, max_value=4))
def test_the_newest_images_within_bounds_are_sent_and_the_rest_are_told(
    conversation: list[list[int]], max_images: int
) -> None:
    sent, names, notices = asyncio.run(_sent_and_told(conversation, max_images))
    newest_first = [
        f"m{number}-{position}.png"
        for number in reversed(range(len(conversation)))
        for position, size in enumerate(conversation[number])
        if size <= LIMIT
    ]
    expected = set(newest_first[:max_images])
    assert {data.decode() for data in sent} == expected
    told = "\n".join(notices)
    assert all(name in told for name in names if name not in expected)
    assert not any(name in told for name in expected)
