"""Reading a file from Discord's CDN or media proxy with aiohttp, never more than a bound.

The library's own `Attachment.read()` reads the whole body, however large, and cannot read an
embed's image at all: here every read stops at its bound, whatever size was declared, so a
file that grew, or a declared size that was wrong, costs at most the bound. Each read has a
deadline of its own: a CDN that stops answering must not hold the turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

from tomori.errors import TomoriError

READ_TIMEOUT_S = 10.0
"""The most one file's read may take, connection included. Short: the turn waits on it (a file
that failed is then not read again for a while: see `unreadable.py`)."""
CHUNK_BYTES = 64 * 1024


class TooLarge(TomoriError):
    """The body is larger than the bound."""


@dataclass(frozen=True, slots=True)
class Fetched:
    data: bytes
    content_type: str
    """The server's Content-Type, without parameters (`image/png`), "" if it sent none."""
    cut: bool
    """More bytes followed the bound (a read that may be cut, such as a text file's)."""


async def fetch(session: aiohttp.ClientSession, url: str, limit: int, *, may_cut: bool) -> Fetched:
    """Up to `limit` bytes of `url`. Past the bound, `TooLarge`, unless `may_cut`: then the
    first `limit` bytes, marked cut. An HTTP error or a failed connection raises aiohttp's
    own error; the deadline raises `TimeoutError`."""
    timeout = aiohttp.ClientTimeout(total=READ_TIMEOUT_S)
    async with session.get(url, timeout=timeout) as response:
        response.raise_for_status()
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        declared = response.content_length
        if declared is not None and declared > limit and not may_cut:
            raise TooLarge
        body = bytearray()
        async for chunk in response.content.iter_chunked(CHUNK_BYTES):
            body += chunk
            if len(body) > limit:
                if not may_cut:
                    raise TooLarge
                return Fetched(bytes(body[:limit]), content_type, cut=True)
        return Fetched(bytes(body), content_type, cut=False)


def where(url: str) -> str:
    """Host and path of a file's URL, for the log: never the query, which on Discord's CDN is
    a signature that lets anyone holding it read the file."""
    parts = urlsplit(url)
    return f"{parts.netloc}{parts.path}"


def failure(url: str, error: Exception) -> str:
    """A failed read of `url`, for the log: where, and why, without the signed URL that
    aiohttp's own errors repeat."""
    if isinstance(error, aiohttp.ClientResponseError):
        why = f"HTTP {error.status}"
    elif isinstance(error, TimeoutError):
        why = f"no answer within {READ_TIMEOUT_S:g}s"
    else:
        why = type(error).__name__
    return f"{where(url)}: {why}"
