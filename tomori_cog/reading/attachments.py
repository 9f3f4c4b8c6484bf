"""What the model is shown of a turn's attachments: images, text files, other files, stickers.

Read once per turn, before any model is asked, so every pass and every fallback model is sent
the very same bytes and nothing is fetched twice. Bounded as a bot author sets it:
- images (PNG, JPEG, WebP, GIF: what vision models take) up to `TOMORI_MAX_IMAGE_BYTES` each,
  and `TOMORI_MAX_IMAGES` per request, newest first, the trigger's own before history's;
  an image's declared size is checked before it is read, and the read stops at the bound; its
  bytes are held, until the turn ends, within what the process's turns may hold at once
  (`image_bytes.py`);
- text files (`text/*` or a known text extension) up to `TOMORI_MAX_ATTACHMENT_CHARS` each,
  given under their name and cut with a marker that says so; `TOMORI_MAX_TEXT_FILES` per
  request and `TOMORI_MAX_TEXT_FILES_CHARS` in all, newest first, the trigger's own before
  history's (the file that reaches the total is cut there);
- any other file named ("a file report.pdf was attached"), stickers and custom emoji as their
  names, and an embed's image (a link to a picture) as an image, within the same bounds.
The bytes decide what a file is, not its declared type: an image is sent under the type its
signature says, bytes that are no image are not sent as one, and a "text" file holding binary
bytes is named, not read. When no model of the chain takes images, none are read: the model is
told of them as any model without vision is.
Nothing a user sent is dropped in silence: an image or a text file left out (too large, over
the count or the total, no room among the images held now, or unreadable) and a file that
could not be read are told to the model in a request-only notice, and each is logged. A file
read is kept a while (`file_cache.py`): the later turns that show its message again do not
download it again. A file whose read failed or hung is not read again for a while (see
`unreadable.py`): later turns, which show its message again, tell the model so at once.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tomori.config.settings import Settings
from tomori.prompt.sniff import image_type, is_text
from tomori.prompt.vision import unseen_images_notice
from tomori.providers.base import ContextItem, Image, Role
from tomori_cog.reading.fetch import TooLarge, failure, where
from tomori_cog.reading.file_cache import FileCache
from tomori_cog.reading.image_bytes import ImageHold
from tomori_cog.reading.message_files import WantedFile, files_of
from tomori_cog.reading.unreadable import UnreadableFiles

log = logging.getLogger(__name__)

BYTES_PER_CHAR = 4
"""UTF-8's longest character: reading this many bytes per character allowed always suffices."""
_CUSTOM_EMOJI = re.compile(r"<a?:(\w{1,32}):\d+>")
MOST_NOTES = 20
"""Files left out named one by one at most; past it, counted (a long history of files must
not make a long notice)."""


@dataclass(frozen=True, slots=True)
class MessageParts:
    """What one message's attachments add to its text, and the images it carries."""

    sections: tuple[str, ...] = ()
    images: tuple[Image, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.sections or self.images)

    def body(self, text: str) -> str:
        """A message's `text` as the model sees it: custom emoji as `:name:`, then each file,
        all of it its author's (said under their name, every further line indented)."""
        return "\n".join([_CUSTOM_EMOJI.sub(r":\1:", text), *self.sections]).strip()

    def at(self, text: str) -> int | None:
        """Where the files begin in `body(text)` (None: it has none): the request budget
        cuts from there before it leaves out whole messages."""
        if not self.sections:
            return None
        head = _CUSTOM_EMOJI.sub(r":\1:", text)
        return len(head.lstrip()) + 1 if head.strip() else 0


@dataclass(frozen=True, slots=True)
class TurnAttachments:
    """A turn's attachments, read: each message's parts, and what the model must be told."""

    parts: Mapping[int, MessageParts] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    unseen_images: int = 0
    """Images not read at all, since no model of the chain takes images."""

    def of(self, message: Any) -> MessageParts:
        return self.parts.get(message.id, MessageParts())

    @property
    def notices(self) -> tuple[ContextItem, ...]:
        """Request-only notices: everything left out, and images no model here can see."""
        notices = [unseen_images_notice(self.unseen_images)] if self.unseen_images else []
        if self.notes:
            named = [f"- {note}" for note in self.notes[:MOST_NOTES]]
            if len(self.notes) > MOST_NOTES:
                named.append(f"- and {len(self.notes) - MOST_NOTES} more files, left out")
            lines = "\n".join(named)
            notices.append(
                ContextItem(Role.USER, f"Some attachments above are not shown to you:\n{lines}")
            )
        return tuple(notices)


async def read_attachments(
    messages: Sequence[Any],
    settings: Settings,
    me: Any,
    *,
    images: bool,
    unreadable: UnreadableFiles,
    cache: FileCache,
    hold: ImageHold,
) -> TurnAttachments:
    """Read what the messages (in the order the model sees them, the trigger last) attached.

    The bot's own messages (`me`) are skipped: the model wrote them, it was never shown their
    files as a user's. `images`: whether any model is sent images; if not, none is read (a
    CDN that hangs must not hold up a model that could never see the picture). `unreadable`:
    the files not to try now, to which each read that fails or hangs here is added; `cache`:
    the files read lately, which are not downloaded again; `hold`: the image bytes the turn
    holds, which its images are reserved in (its owner gives them back when the turn ends).
    """
    own_id = getattr(me, "id", None)
    found = {m.id: files_of(m) for m in messages if m.author.id != own_id}
    unseen = 0
    if not images:
        for candidates in found.values():
            unseen += sum(1 for one in candidates if isinstance(one, WantedFile) and not one.text)
            candidates[:] = [one for one in candidates if isinstance(one, str) or one.text]
    newest_first = [  # by message; a message's own files in their order
        one for listed in reversed(found.values()) for one in listed if isinstance(one, WantedFile)
    ]
    wanted = _within_bounds(newest_first, settings)
    if wanted:
        async with aiohttp.ClientSession() as session, asyncio.TaskGroup() as group:
            for one in wanted:
                group.create_task(_read(session, one, settings, unreadable, cache, hold))
    _within_total(wanted, settings)
    parts = {message_id: _parts(candidates) for message_id, candidates in found.items()}
    notes = [f"{_whose(one)} {one.problem}" for one in newest_first if one.problem]
    return TurnAttachments(parts, tuple(notes), unseen)


def _within_bounds(newest_first: Sequence[WantedFile], settings: Settings) -> list[WantedFile]:
    """The files to read; those left out by their size or their count say why (`problem`)."""
    wanted: list[WantedFile] = []
    images_left = settings.max_images
    texts_left = settings.max_text_files
    for one in newest_first:
        if one.text and texts_left > 0:
            texts_left -= 1
            wanted.append(one)
        elif one.text:
            one.problem = (
                f"is left out: only the {settings.max_text_files} newest text files are shown"
            )
        elif one.declared_size is not None and one.declared_size > settings.max_image_bytes:
            one.problem = _too_large(one.declared_size, settings)
        elif images_left > 0:
            images_left -= 1
            wanted.append(one)
        elif settings.max_images == 0:
            one.problem = "is left out: this bot sends no images to models"
        else:
            one.problem = f"is left out: only the {settings.max_images} newest images are shown"
        if one.problem is not None:
            log.info("%s %s", _whose(one), one.problem)
    return wanted


def _within_total(newest_first: Sequence[WantedFile], settings: Settings) -> None:
    """Each text file read becomes its section of the request, newest first, within
    `TOMORI_MAX_TEXT_FILES_CHARS` in all: the file that reaches the total is cut there, and
    those after it are left out (their `problem` tells the model)."""
    total = settings.max_text_files_chars
    left = total
    for one in newest_first:
        if one.body is None:
            continue
        if left == 0:
            one.problem = f"is left out: the newer files shown fill the {total} characters allowed"
            log.info("%s %s", _whose(one), one.problem)
            continue
        limit = min(settings.max_attachment_chars, left)
        one.result = text_section(one.name, one.body, cut=one.cut, limit=limit)
        left -= min(len(one.body), limit)


def _parts(candidates: list[WantedFile | str]) -> MessageParts:
    sections = [one if isinstance(one, str) else one.result for one in candidates]
    images = [one.result for one in candidates if not isinstance(one, str)]
    return MessageParts(
        tuple(section for section in sections if isinstance(section, str)),
        tuple(image for image in images if isinstance(image, Image)),
    )


def _whose(one: WantedFile) -> str:
    return f"{one.message.author.display_name}'s {'file' if one.text else 'image'} {one.name}"


def _too_large(size: int | None, settings: Settings) -> str:
    shown = f"({_size(size)}) " if size is not None else ""
    return f"{shown}is larger than the {_size(settings.max_image_bytes)} allowed"


async def _read(
    session: aiohttp.ClientSession,
    one: WantedFile,
    settings: Settings,
    unreadable: UnreadableFiles,
    cache: FileCache,
    hold: ImageHold,
) -> None:
    """Fill `one.result` (a text file's `body`), or `one.problem` (and log why) when it
    cannot be shown."""
    failed_ago = unreadable.failed_lately(one.url)
    if failed_ago is not None:
        log.info("not reading %s of message %s: its read failed %.0fs ago (%s)", one.name,
                 one.message.id, failed_ago, where(one.url))  # fmt: skip
        one.problem = "could not be read"
        return
    started = time.monotonic()
    try:
        if one.text:
            await _read_text(session, one, settings.max_attachment_chars, cache)
            return
        await _read_image(session, one, settings, cache, hold)
    except TooLarge:
        log.info("%s of message %s is too large to read", one.name, one.message.id)
        one.problem = _too_large(None, settings)
    except asyncio.CancelledError:  # the turn was stopped (by /kill) while this read ran
        ran = time.monotonic() - started
        if unreadable.stopped(one.url, ran):
            log.warning("stopped reading %s of message %s: %s: stopped after %.1fs", one.name,
                        one.message.id, where(one.url), ran)  # fmt: skip
        raise
    except Exception as error:  # any failure: the model is told, the turn goes on
        log.warning("could not read %s of message %s: %s", one.name, one.message.id,
                    failure(one.url, error))  # fmt: skip
        unreadable.failed(one.url)
        one.problem = "could not be read"


async def _read_image(
    session: aiohttp.ClientSession,
    one: WantedFile,
    settings: Settings,
    cache: FileCache,
    hold: ImageHold,
) -> None:
    """Read an image within the bytes the turn may hold now: reserved before the read (its
    size as kept or declared, else the bound), kept at its real size if it is one."""
    bound = settings.max_image_bytes
    reserved = cache.size(one.url, bound, may_cut=False)
    if reserved is None:
        reserved = bound if one.declared_size is None else min(one.declared_size, bound)
    if not hold.reserve(reserved):
        _no_room(one)
        return
    try:
        fetched = await cache.read(session, one.url, bound, may_cut=False)
        larger = len(fetched.data) - reserved  # than declared, within the bound
        if larger > 0:
            if not hold.reserve(larger):
                _no_room(one)
                return
            reserved += larger
        kind = image_type(fetched.data)  # the bytes' own type, whatever was declared
        if kind is not None:
            one.result = Image(fetched.data, kind)
        elif one.content_type:  # an attachment said to be an image, but it is not one
            log.warning("%s of message %s is not an image: %s", one.name, one.message.id,
                        where(one.url))  # fmt: skip
            one.problem = "could not be read: it is not an image"
        else:  # a link that looked like a picture: its URL is in the message text already
            log.info("embed image %s is %r, not an image a model takes", one.name,
                     fetched.content_type)  # fmt: skip
    finally:
        kept = len(one.result.data) if isinstance(one.result, Image) else 0
        hold.give_back(reserved - kept)


def _no_room(one: WantedFile) -> None:
    one.problem = "is left out: the bot holds as many images as it may right now"
    log.info("%s %s", _whose(one), one.problem)


async def _read_text(
    session: aiohttp.ClientSession, one: WantedFile, limit: int, cache: FileCache
) -> None:
    if limit == 0:
        one.result = f"[a file {one.name} was attached]"
        return
    fetched = await cache.read(session, one.url, limit * BYTES_PER_CHAR, may_cut=True)
    if not is_text(fetched.data, cut=fetched.cut):
        log.info("%s of message %s is not text: named, not read", one.name, one.message.id)
        one.result = f"[a file {one.name} was attached]"
        return
    one.body, one.cut = decoded(fetched.data, cut=fetched.cut), fetched.cut


def decoded(data: bytes, *, cut: bool) -> str:
    """A text file's bytes as text. `cut`: `data` is only the start of the file, which may end
    inside a character; the decoder then holds that part back rather than garble it."""
    return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=not cut)


def text_section(name: str, text: str, *, cut: bool, limit: int) -> str:
    """A text file as the model reads it: under its name, its first `limit` characters, and a
    marker when there was more (`cut`: `text` is only the start of the file)."""
    marker = (
        f"\n[... {name} is cut here: only its first {limit} characters are shown]"
        if cut or len(text) > limit
        else ""
    )
    return f"[file {name}]\n{text[:limit]}{marker}\n[end of {name}]"


def _size(size: int) -> str:
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    return f"{size / 1_000:.1f} kB" if size >= 1_000 else f"{size} bytes"
