"""Files already read, kept so that a message shown turn after turn is downloaded once.

A message stays in its channel's history for many turns, and each turn shows its files again:
without this, every later question in a channel downloaded every file its history shows once
more (a hundred files were a hundred downloads per question). A file is known as
`unreadable.py` knows it, by the host and path of its URL (Discord's CDN signs its URLs with a
query that changes when they are refreshed; the path, which holds the attachment's ID, names
the file), and by how it was read (its bound, and whether it may be cut): a read within a
smaller bound is not the whole file. Attachments never change once posted.

Kept in memory, the file used least lately forgotten first, within `TOMORI_ATTACHMENT_CACHE_BYTES`
in all; a file larger than that is read every time, and so is one whose read failed (`unreadable.py`
decides when to try it again). A reload or a restart forgets them.
"""

from __future__ import annotations

from collections import OrderedDict

import aiohttp

from tomori_cog.reading.fetch import Fetched, fetch, where

_Key = tuple[str, int, bool]


class FileCache:
    """The files read lately, by (where, bound, may be cut), the least lately used first."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._kept: OrderedDict[_Key, Fetched] = OrderedDict()
        self._bytes = 0

    def size(self, url: str, limit: int, *, may_cut: bool) -> int | None:
        """How many bytes a read of `url` within `limit` gives, if it is kept; else None."""
        found = self._kept.get((where(url), limit, may_cut))
        return None if found is None else len(found.data)

    async def read(
        self, session: aiohttp.ClientSession, url: str, limit: int, *, may_cut: bool
    ) -> Fetched:
        """`fetch(session, url, limit, may_cut=...)`, from memory if it was read lately."""
        key = (where(url), limit, may_cut)
        found = self._kept.get(key)
        if found is not None:
            self._kept.move_to_end(key)
            return found
        fetched = await fetch(session, url, limit, may_cut=may_cut)
        self._keep(key, fetched)
        return fetched

    def _keep(self, key: _Key, fetched: Fetched) -> None:
        size = len(fetched.data)
        if size > self._max_bytes:
            return
        earlier = self._kept.pop(key, None)  # two turns read it at once
        if earlier is not None:
            self._bytes -= len(earlier.data)
        while self._kept and self._bytes + size > self._max_bytes:
            _, oldest = self._kept.popitem(last=False)
            self._bytes -= len(oldest.data)
        self._kept[key] = fetched
        self._bytes += size
