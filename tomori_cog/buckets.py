"""nextcord's rate-limit buckets, kept per channel as Discord means them.

Discord names a route's bucket with a hash (`X-RateLimit-Bucket`) that is the same for every
channel: the bucket itself is the hash *and* the route's major parameter (the channel, guild or
webhook). nextcord 3's `HTTPClient` keeps its buckets in `_buckets`, keyed by the hash alone,
and moves every route that learns a known hash onto the stored bucket: after the first answers,
all of a bot's channels share one bucket for creates, one for edits and one for typing, five
requests every five seconds for the whole bot. At 50 channels most answers never finished.

`scope_buckets` corrects the bot's own client: it keys `_buckets` by the hash and the major
parameters of the route being sent (which nextcord's `Route` already holds, and which a
context variable carries from `request` into the lookups it makes). Nothing else of nextcord
changes. It applies to the versions whose client it was checked against and logs, without
changing anything, for a client whose insides differ.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from typing import Any

log = logging.getLogger(__name__)

_route_scope: contextvars.ContextVar[str] = contextvars.ContextVar("route_scope", default="")
"""The major parameters of the route the current task is sending."""


class ScopedBuckets(dict[Any, Any]):
    """nextcord's `{bucket hash: RateLimit}`, each hash kept apart per route scope."""

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__((key, _route_scope.get()))

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__((key, _route_scope.get()), value)

    def __delitem__(self, key: Any) -> None:
        super().__delitem__((key, _route_scope.get()))

    def __contains__(self, key: object) -> bool:
        return super().__contains__((key, _route_scope.get()))

    def get(self, key: Any, default: Any = None) -> Any:
        return super().get((key, _route_scope.get()), default)


def major_parameters(route: Any) -> str:
    """What Discord keys a bucket by besides its hash: the route's channel, guild or webhook."""
    return ":".join(
        str(getattr(route, name, None))
        for name in ("channel_id", "guild_id", "webhook_id", "webhook_token")
    )


def scope_buckets(http: Any) -> bool:
    """Key the buckets of nextcord's `http` client per route scope; True if it was done.

    Idempotent: a second cog on the same bot (a reload) finds it done.
    """
    if isinstance(getattr(http, "_buckets", None), ScopedBuckets):
        return True
    buckets, request = getattr(http, "_buckets", None), getattr(http, "request", None)
    if type(buckets) is not dict or request is None:
        log.warning(
            "this nextcord's HTTP client is not the one the cog knows: its rate-limit buckets "
            "are left as they are (all channels may share one)"
        )
        return False

    @functools.wraps(request)
    async def scoped_request(route: Any, *args: Any, **kwargs: Any) -> Any:
        token = _route_scope.set(major_parameters(route))
        try:
            return await request(route, *args, **kwargs)
        finally:
            _route_scope.reset(token)

    http._buckets = ScopedBuckets()  # what was learnt so far is learnt again, per channel
    http.request = scoped_request
    return True
