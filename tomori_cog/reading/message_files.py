"""Which files a message carries for the model, and what each is: the one place that knows
an image from a text file from any other file, by the type Discord declared or the name.

An image (PNG, JPEG, WebP, GIF: what vision models take) or a text file (`text/*` or a known
text extension) is a `WantedFile` to read; any other file, a sticker, is named at once. An
embed's picture counts as an image, read only from Discord's media proxy.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from tomori.providers.base import Image

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
TEXT_TYPES = frozenset(
    {"application/json", "application/xml", "application/javascript", "application/x-yaml",
     "application/yaml", "application/toml", "application/x-sh", "application/sql"}
)  # fmt: skip
TEXT_EXTENSIONS = frozenset(
    {
        ".txt", ".md", ".markdown", ".rst", ".py", ".pyi", ".js", ".mjs", ".ts", ".tsx", ".jsx",
        ".json", ".jsonl", ".csv", ".tsv", ".log", ".xml", ".html", ".htm", ".css", ".scss",
        ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env", ".sh", ".bash", ".zsh", ".ps1",
        ".bat", ".sql", ".c", ".h", ".cpp", ".hpp", ".cc", ".cs", ".java", ".kt", ".kts", ".go",
        ".rs", ".rb", ".php", ".pl", ".lua", ".r", ".swift", ".scala", ".dart", ".hs", ".ex",
        ".exs", ".erl", ".clj", ".vue", ".svelte", ".tex", ".diff", ".patch", ".srt", ".vtt",
        ".gradle",
    }
)  # fmt: skip


@dataclass(slots=True)
class WantedFile:
    """One file to read for the model, by the message it came with."""

    message: Any
    name: str
    url: str
    declared_size: int | None
    content_type: str
    text: bool
    result: str | Image | None = None
    problem: str | None = None
    """Why it is not shown, for the model's notice; None with no result: nothing to tell."""
    body: str | None = None
    """A text file's text, as read (within its own bound), until the total bound makes it a
    section of the request (`result`)."""
    cut: bool = False
    """Its text is only the start of the file."""


def files_of(message: Any) -> list[WantedFile | str]:
    """The message's files, stickers and embed images: to read, or already named."""
    found: list[WantedFile | str] = []
    for attachment in message.attachments:
        name = _shown_name(attachment.filename)
        content_type = _content_type(attachment.content_type, name)
        if content_type in IMAGE_TYPES or _is_text(content_type, name):
            found.append(
                WantedFile(message, name, attachment.url, attachment.size, content_type,
                        text=content_type not in IMAGE_TYPES)
            )  # fmt: skip
        else:
            found.append(f"[a file {name} was attached]")
    for sticker in getattr(message, "stickers", ()):
        found.append(f"[sticker: {sticker.name}]")
    for embed in message.embeds:
        url = _embed_image(embed)
        if url is not None:
            name = PurePosixPath(str(getattr(embed, "url", None) or url).split("?")[0]).name
            found.append(
                WantedFile(message, _shown_name(name or "image"), url, None, "", text=False)
            )
    return found


def _shown_name(name: str) -> str:
    """A file name as the markers around it show it: a `]` or a line break in the name must
    not end a `[file ...]` marker early, nor start a line of its own."""
    return " ".join(name.split()).replace("[", "(").replace("]", ")")


def _embed_image(embed: Any) -> str | None:
    """Where Discord's media proxy serves an embed's picture: a link to an image (its
    thumbnail) or a bot's embed image. Only the proxy is read, never a URL a user posted."""
    sources = [getattr(embed, "image", None)]
    if getattr(embed, "type", None) == "image":
        sources.append(getattr(embed, "thumbnail", None))
    for source in sources:
        url = getattr(source, "proxy_url", None) if source is not None else None
        if isinstance(url, str) and url:
            return url
    return None


def _content_type(declared: str | None, name: str) -> str:
    """The attachment's own type, or the one its name implies when Discord gave none."""
    kind = (declared or mimetypes.guess_type(name)[0] or "").split(";")[0].strip().lower()
    return "image/jpeg" if kind == "image/jpg" else kind


def _is_text(content_type: str, name: str) -> bool:
    if content_type.startswith("text/") or content_type in TEXT_TYPES:
        return True
    return PurePosixPath(name.lower()).suffix in TEXT_EXTENSIONS
