"""discord.py's way to the commands' localizations: a `Translator` on the bot's command tree.

discord.py registers a command's, an option's or a choice's localizations only through the
translator of the bot's tree, which it asks for each text as it syncs. The cog declares its
texts as `locale_str`s carrying their catalog key (`worded`); this translator says those in
each language the bot speaks (`tomori.commands.localized`) and hands every other text to the
translator the bot had, if any, so the bot's own commands keep their own translations. The
cog puts it on the tree as it loads and gives the bot's own back as it unloads.
"""

from __future__ import annotations

from typing import Any

from discord import Locale, app_commands

from tomori.words import localizations

KEY = "tomori_words"
"""The `locale_str` extra naming a text's catalog key."""


def worded(english: str, key: str) -> app_commands.locale_str:
    """`english`, said in other languages as the catalog's text `key`."""
    return app_commands.locale_str(english, **{KEY: key})


class WordsTranslator(app_commands.Translator):
    is_tomoris = True
    """Read instead of the class: a reload of the extension imports this module afresh."""

    def __init__(self, inner: app_commands.Translator | None) -> None:
        self.inner = inner

    async def load(self) -> None:
        if self.inner is not None:
            await self.inner.load()

    async def unload(self) -> None:
        if self.inner is not None:
            await self.inner.unload()

    async def translate(
        self,
        string: app_commands.locale_str,
        locale: Locale,
        context: app_commands.TranslationContextTypes,
    ) -> str | None:
        key = string.extras.get(KEY)
        if key is None:
            inner = self.inner
            return None if inner is None else await inner.translate(string, locale, context)
        return localizations(str(key)).get(locale.value)


async def install(tree: Any) -> None:
    """Put the translator on `tree`, over the one it had (once, however often loaded)."""
    current = tree.translator
    if not getattr(current, "is_tomoris", False):
        await tree.set_translator(WordsTranslator(current))


async def uninstall(tree: Any) -> None:
    """Give `tree` back the translator it had before `install`."""
    current = tree.translator
    if getattr(current, "is_tomoris", False):
        await tree.set_translator(current.inner)
