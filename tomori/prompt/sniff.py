"""What a file's bytes are, whatever its name or declared type says.

A content type or an extension is only what the uploader (or their client) claimed: a `.png`
may be a JPEG, a `.txt` may be a zip. A provider sent bytes under the wrong image type may
refuse the request or misread the picture, and binary bytes decoded as text only fill the
model's context with noise. So the bytes decide.
"""

from __future__ import annotations

import codecs

MAX_UNDECODABLE = 0.1
"""Text with more than this share of characters that are not valid UTF-8 is not text."""


def image_type(data: bytes) -> str | None:
    """The image type the bytes' signature says (PNG, JPEG, GIF, WebP), or None if none."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


REPLACEMENT = "\ufffd"
"""What the decoder puts where bytes are not UTF-8."""


def is_text(data: bytes, *, cut: bool) -> bool:
    """Whether the bytes read as text: no NUL, and mostly valid UTF-8. `cut`: only the file's
    start, which may end inside a character (not counted against it)."""
    if b"\x00" in data:
        return False
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=not cut)
    written = data.count(REPLACEMENT.encode())  # a U+FFFD the file itself holds is text
    return text.count(REPLACEMENT) - written <= MAX_UNDECODABLE * len(text)
