"""Words to say: a catalog key and its values, said in a reader's language where it is shown.

The core builds a `Said` where it decides what to tell someone, never the text itself; the
place that shows it says it (`say`) in the reader's language (`tomori.words.locales`).
A value is said in the same language: a name as it is, a number as digits, another `Said`
in turn, a `Listed` as that language lists, `Clauses` as it runs clauses together, `Lines`
one under another.
"""

from __future__ import annotations

from dataclasses import dataclass

from tomori.words.catalog import ENGLISH, catalog, placeholders


@dataclass(frozen=True, slots=True)
class Listed:
    """Names said as a list, as the language lists: `a, b and c` in English, `a、bとc` in
    Japanese; without `last`, by the separator alone (`a, b, c`; `a、b、c`)."""

    items: tuple[str, ...]
    last: bool = True


@dataclass(frozen=True, slots=True)
class Clauses:
    """Texts said as one run of clauses, each in the reader's language: `a; b` in English,
    `a、b` in Japanese (what a setting lacks, where values came from)."""

    items: tuple[Text, ...]


@dataclass(frozen=True, slots=True)
class Lines:
    """Texts said one under another, each in the reader's language (an account's steps)."""

    items: tuple[Text, ...]


@dataclass(frozen=True, slots=True)
class Said:
    key: str
    values: tuple[tuple[str, Value], ...] = ()


Text = str | Said
"""What a place shows: words of the catalog, or a text of its own (a name, a model's label,
a setting's error) shown as it is."""
Value = str | int | Said | Listed | Clauses | Lines
"""What fills a placeholder."""


def said(key: str, **values: Value) -> Said:
    """The catalog's text `key`, to be said with `values`: an unknown key, or values that are
    not the ones its text names, raise at once (where the words are chosen, not where they
    are shown)."""
    english = catalog(ENGLISH).get(key)
    if english is None:
        raise KeyError(f"no text {key!r} in the catalog")
    if placeholders(english) != values.keys():
        raise KeyError(
            f"{key!r} is said with {sorted(placeholders(english))}, not {sorted(values)}"
        )
    return Said(key, tuple(values.items()))


def say(text: Value, locale: str = ENGLISH) -> str:
    """`text` (words, or a value of them) in `locale` (a language of `tomori.words.LOCALES`),
    its values filled."""
    if isinstance(text, Said):
        words = catalog(locale).get(text.key) or catalog(ENGLISH)[text.key]
        return words.format_map({name: say(value, locale) for name, value in text.values})
    if isinstance(text, Listed):
        return _listed(text, locale)
    if isinstance(text, Clauses):
        return catalog(locale)["list.clauses"].join(say(item, locale) for item in text.items)
    if isinstance(text, Lines):
        return "\n".join(say(item, locale) for item in text.items)
    return str(text)


def _listed(listed: Listed, locale: str) -> str:
    words, items = catalog(locale), listed.items
    if not listed.last or len(items) < 2:
        return words["list.separator"].join(items)
    head = words["list.separator"].join(items[:-1])
    return words["list.last"].format(head=head, last=items[-1])
