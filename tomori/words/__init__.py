"""The words a Discord user reads, in English and the other languages the bot speaks.

- `catalog.py`  each language's words, as data (`en.toml`, `ja.toml`: one line per text,
                under one key in every language), read once; the caps Discord puts on where
                a text is shown, and the checks a test holds every catalog to
- `said.py`     `Said`: words to say, a key and its values, said in a language when a place
                with a language shows them (`say`); `Listed`, names said as a list;
                `Clauses`, texts run together as clauses; `Lines`, one under another
- `locales.py`  which language a reader gets: the interaction's, then the server's, then
                English (`chosen`); the localizations Discord registers with a command

The core says what it tells someone as `Said`; the place that shows it knows the reader
(`tomori_cog` reads an interaction's locale, or the server's preferred locale) and says it
in their language. The console speaks English.
"""

from tomori.words.catalog import ENGLISH, LOCALES, catalog
from tomori.words.locales import chosen, localizations
from tomori.words.said import Clauses, Lines, Listed, Said, Text, said, say

__all__ = [
    "ENGLISH",
    "LOCALES",
    "Clauses",
    "Lines",
    "Listed",
    "Said",
    "Text",
    "catalog",
    "chosen",
    "localizations",
    "said",
    "say",
]
