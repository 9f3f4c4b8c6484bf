"""The language a Discord reader gets (`tomori.words.chosen`), read off the library's objects.

An interaction carries its user's locale and, in a server, the server's preferred one: the
answer to it is in the first the bot speaks. A message in a channel, which nobody's
interaction asked for (a notice, a confirmation's prompt), is in the server's preferred
locale; in a direct message, English. Both libraries name these alike (`locale`,
`guild_locale`, `preferred_locale`), as a string or as their `Locale` enum.
"""

from __future__ import annotations

from typing import Any

from tomori.words import chosen


def of_interaction(interaction: Any) -> str:
    """The language the answer to `interaction` is in."""
    return chosen(getattr(interaction, "locale", None), getattr(interaction, "guild_locale", None))


def of_channel(channel: Any) -> str:
    """The language of what the bot posts in `channel` for everyone there."""
    guild = getattr(channel, "guild", None)
    return chosen(getattr(guild, "preferred_locale", None))
