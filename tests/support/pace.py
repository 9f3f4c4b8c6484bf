"""A quicker pace for each channel's writes, for a test whose subject is not Discord's pace.

Its own module, imported only by the tests that use it: not through cog_settings, which the
suite's conftest imports, so every other test process imports the cog as it did before.
"""

from __future__ import annotations

from typing import Any, Protocol

from tomori.delivery.budget import CHANNEL_WRITES, ChannelPace
from tomori_cog import pacing


class Patcher(Protocol):
    """What sets an attribute for a test: pytest's `monkeypatch` (undone after it), or a plain
    setter in a bot process of its own."""

    def setattr(self, target: Any, name: str, value: Any) -> None: ...


def quicken_channel_pace(window_s: float, patch: Patcher) -> None:
    """Have the cog pace each channel's writes by `window_s` instead of Discord's window
    (webhooks keep theirs): for a test whose subject is not the pace (a turn at a time, what
    traffic leaves behind) and that must not wait out Discord's buckets."""

    def channel_pace(limit: int = CHANNEL_WRITES, *args: Any, **kwargs: Any) -> ChannelPace:
        if not args and not kwargs:
            return ChannelPace(limit, window_s)
        return ChannelPace(limit, *args, **kwargs)

    patch.setattr(pacing, "ChannelPace", channel_pace)
