"""Each language's words, read once from the catalogs shipped beside this module.

A catalog is a TOML file per language (`en.toml`, `ja.toml`); a text's key is its dotted
path (`[notice]` then `queue_full = "..."` is `notice.queue_full`), so adding a text is one
line in each. Placeholders are `{name}`, filled when the text is said; every
language's text for a key names the same ones. English holds every key; a key missing from
another language, or a text longer than where it is shown allows (`cap`), fails a test
(tests/words/test_catalog.py), so no reader ever meets a gap.

Slash commands' English lives in their table (`tomori.commands.table`); the other languages
hold them under `command.<path>` (a command's description: `command.tomori persona add`),
`option.<path>.<option>` (an option's) and `choice.<option>.<value>` (a choice's name).
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

ENGLISH = "en"
LOCALES = (ENGLISH, "ja")
"""The languages the bot speaks, each a catalog; English is the last resort."""

TITLE_CHARS = 256
DESCRIPTION_CHARS = 4_096
CONTENT_CHARS = 2_000
LABEL_CHARS = 80
COMMAND_CHARS = 100
MENU_CHARS = 32
"""A context-menu command's name, in every language (Discord's cap on a command's name)."""
"""Discord's caps: an embed's title and description, a message's content, a button's label,
a command's, an option's or a choice's description or name."""


@cache
def catalog(locale: str) -> Mapping[str, str]:
    """The texts of `locale`, by key."""
    data = resources.files(__package__).joinpath(f"{locale}.toml").read_text(encoding="utf-8")
    return dict(_flat(tomllib.loads(data)))


def _flat(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    texts: list[tuple[str, str]] = []
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            texts += _flat(value, f"{key}.")
        elif isinstance(value, str):
            texts.append((key, value))
        else:
            raise TypeError(f"{key} is not a text")
    return texts


def cap(key: str) -> int:
    """The most characters the text `key` may hold where Discord shows it: a button's label
    (`button.`), a command's words (`command.`, `option.`, `choice.`), a message's content
    (`reply.`), an embed's title (`title.`), a message command's name in the Apps menu
    (`menu.`), or an embed's description, or a part of one."""
    if key.startswith("menu."):
        return MENU_CHARS
    if key.startswith("button."):
        return LABEL_CHARS
    if key.startswith(("command.", "option.", "choice.")):
        return COMMAND_CHARS
    if key.startswith("reply."):
        return CONTENT_CHARS
    if key.startswith("title."):
        return TITLE_CHARS
    return DESCRIPTION_CHARS


def placeholders(text: str) -> frozenset[str]:
    """The `{name}`s `text` fills when said."""
    return frozenset(name for _, name, _, _ in string.Formatter().parse(text) if name)
