"""Proxied members (PluralKit, Tupperbox), written once: which bots are proxies, which repost
is which member's message, and how long the cog waits to know. Nothing here knows Discord; the
cog (`tomori_cog/listener/proxies.py`) reads the messages and hands over plain values.

A proxy bot deletes a member's message and reposts its text (less the member's proxy tags)
through a webhook of its own, under the name of one of the member's personas, within a second
or two; PluralKit posts before it deletes, others may delete first. Answering the original
would answer a message that is about to vanish, and answering both would answer twice. So in a
server where a proxy is present, a person's message the bot would answer first waits
`TOMORI_PROXY_GRACE_MS` (`expect` as it arrives, then `taken` once the reply rule has said how
it asks): deleted or reposted in that time, it is not answered; else it is answered as it is.
A repost by a known proxy is answered only as the repost of such a message (`claim`), for its
author and as that message asked; one that reposts nothing the cog waits for, or a message
that asked for no reply, is not answered at all. A repost is its author's stop word as their
own message would be (the original, "lu: stop", still wore its tags).

A repost matches an original of its channel whose text is exactly the repost's once the proxy's
tags are taken from its start and its end (whitespace aside; a tag is at most `MAX_TAG_CHARS`),
and that carried as many files, arriving within the grace of the original's arrival, or of its
deletion when that came first: one member's proxied "of" cannot claim another member's
question. Where several originals match (one member's "lu: stop" and another's plain "stop"),
one the proxy deleted already is the one it reposted; else a tagged original wins over an
untagged one (a proxy reposts a message for its tags), then the earliest (a member's two quick
messages are reposted in order). Two untagged originals of the same text (an autoproxied
member's, another's) stay ambiguous until the proxy deletes its own: the earlier is claimed.

What it does not know: the proxy's own account of who wrote what (its API is not asked), and
messages seen by another process (a channel's events reach one process: its shard's).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

KNOWN_PROXIES: Mapping[int, str] = {
    466378653216014359: "PluralKit",
    431544605209788416: "Tupperbox",
}
"""The proxy bots every bot recognises, by their application's ID (their webhooks' messages
carry it as `application_id`, and it is their bot user's ID too); `TOMORI_PROXY_BOTS` adds
others."""


MAX_TAG_CHARS = 16
"""The longest proxy tag at either end of a message (PluralKit's are a few characters)."""


def tags_around(original: str, repost: str) -> int | None:
    """How many characters of tags a proxy took from `original` to repost it as `repost`
    ("lu: hi" reposted as "hi": 3), whitespace aside; None if it is not its repost."""
    whole, kept = " ".join(original.split()), " ".join(repost.split())
    start = whole.find(kept)
    while start != -1:
        after = len(whole) - start - len(kept)
        if start <= MAX_TAG_CHARS and after <= MAX_TAG_CHARS:
            return len(whole) - len(kept)
        start = whole.find(kept, start + 1)
    return None


def reposts(original: str, repost: str) -> bool:
    """Whether `repost` is `original`'s text once a proxy stripped its tags."""
    return tags_around(original, repost) is not None


@dataclass(frozen=True, slots=True)
class Original:
    """A person's message a proxy may be about to repost."""

    message_id: int
    channel_id: int
    author_id: int
    text: str
    files: int


@dataclass(slots=True)
class _Waiting[T]:
    original: Original
    arrived_at: float
    gone: asyncio.Future[None] = field(default_factory=asyncio.Future)
    """Done once the original is deleted or reposted: it is not answered."""
    asked: asyncio.Future[T | None] = field(default_factory=asyncio.Future)
    """How the original asked for its reply, once the reply rule said (None: it did not)."""
    deleted_at: float | None = None
    claimed: bool = False
    """A repost stands for it: no other may claim it (it stays until it has said how it
    asked, which the repost awaits)."""

    def expired(self, now: float, grace_s: float) -> bool:
        return now - (self.deleted_at or self.arrived_at) > grace_s


class ProxiedMessages[T]:
    """The originals waiting out their grace, and those deleted awaiting their repost; one
    owner, the cog's listener. `T` is how a message asked for its reply (the cog's own)."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self._waiting: dict[int, _Waiting[T]] = {}
        """By message ID, in arrival order."""

    def expect(self, original: Original) -> None:
        """`original` arrived where a proxy is present: noted before anything else is asked
        of it, so its deletion or repost is known however long its reply rule takes."""
        now = time.monotonic()
        self._forget_expired(now)
        self._waiting[original.message_id] = _Waiting(original, now)

    async def taken(self, message_id: int, asked: T | None) -> bool:
        """The original asks for a reply as `asked` (None: it asks for none, and returns at
        once): wait out its grace. True if it was deleted or reposted (not to be answered),
        False if neither came (answered as it is, and forgotten here)."""
        waiting = self._waiting.get(message_id)
        if waiting is None:
            return False
        _settle(waiting.asked, asked)
        if waiting.claimed:
            del self._waiting[message_id]
            return True
        if asked is None:
            return True  # kept for its grace: a repost of it is not answered either
        left = waiting.arrived_at + self.grace_s - time.monotonic()
        try:
            await asyncio.wait_for(asyncio.shield(waiting.gone), max(left, 0))
        except TimeoutError:
            self._waiting.pop(message_id, None)
            return False
        return True

    def forget(self, message_id: int) -> None:
        """The original's reply rule failed: nothing waits for it."""
        waiting = self._waiting.pop(message_id, None)
        if waiting is not None:
            _settle(waiting.asked, None)

    def deleted(self, message_ids: Iterable[int]) -> None:
        """Messages were deleted: a waiting original among them is not answered, and awaits
        its repost for the grace from now."""
        now = time.monotonic()
        for message_id in message_ids:
            waiting = self._waiting.get(message_id)
            if waiting is not None and waiting.deleted_at is None:
                waiting.deleted_at = now
                _settle(waiting.gone, None)

    async def claim(
        self, channel_id: int, text: str, files: int
    ) -> tuple[Original, T | None] | None:
        """The original a known proxy's repost (its `text` and `files`) stands for, taken from
        the waiting, and how it asked for its reply (None: it asked for none, so the repost is
        not answered, though it may still be its author's stop word); None if it reposts
        nothing waiting."""
        now = time.monotonic()
        self._forget_expired(now)
        candidates = [
            waiting
            for waiting in self._waiting.values()
            if not waiting.claimed
            and waiting.original.channel_id == channel_id
            and waiting.original.files == files
            and reposts(waiting.original.text, text)
        ]
        found = self._reposted(candidates, text)
        if found is None:
            return None
        found.claimed = True
        _settle(found.gone, None)
        asked = await found.asked
        if self._waiting.get(found.original.message_id) is found:
            del self._waiting[found.original.message_id]
        return found.original, asked

    @staticmethod
    def _reposted(candidates: list[_Waiting[T]], text: str) -> _Waiting[T] | None:
        """Which of the matching originals a repost stands for (see the module docstring)."""
        deleted = [c for c in candidates if c.deleted_at is not None]
        if deleted:
            return min(deleted, key=lambda c: c.deleted_at or 0.0)
        tagged = [c for c in candidates if tags_around(c.original.text, text)]
        ranked = tagged or candidates
        return ranked[0] if ranked else None

    def _forget_expired(self, now: float) -> None:
        """Originals neither reposted nor answered within the grace (deleted, or asking for
        no reply)."""
        for message_id, waiting in list(self._waiting.items()):
            if waiting.expired(now, self.grace_s) and waiting.asked.done():
                del self._waiting[message_id]

    def __len__(self) -> int:
        return len(self._waiting)


def _settle[V](future: asyncio.Future[V], value: V) -> None:
    if not future.done():
        future.set_result(value)
