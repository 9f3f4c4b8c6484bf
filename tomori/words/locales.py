"""Which language a reader gets, and the localizations a slash command registers.

Discord names a language by its locale (`ja`, `en-US`, `en-GB`, ...): an interaction carries
its user's, and a server has a preferred one (what its admins chose in the server's
settings, `en-US` unless they did). A reader gets the first of them the bot speaks, read by
its language (`en-GB` is English), then English. A notice in a channel, which no interaction
asked for, has only the server's.
"""

from __future__ import annotations

from tomori.words.catalog import ENGLISH, LOCALES, catalog

DISCORD_LOCALES = {"ja": "ja"}
"""Each language but English by the locale Discord names it with (English is what a command
declares; it has no localization of its own)."""


def chosen(*wanted: object) -> str:
    """The first of the locales `wanted` (an interaction's, then a server's; None or a
    library's locale object alike) that the bot speaks, else English."""
    for locale in wanted:
        if locale is None:
            continue
        code = str(getattr(locale, "value", locale))
        language = code.split("-", 1)[0].lower()
        if language in LOCALES:
            return language
    return ENGLISH


def localizations(key: str) -> dict[str, str]:
    """The text `key` in every language but English, by Discord's locale: a command's, an
    option's or a choice's localizations as Discord registers them."""
    return {
        discord: catalog(language)[key]
        for language, discord in DISCORD_LOCALES.items()
        if key in catalog(language)
    }
