"""What every name and word of the cast must be, checked before it is stored: within Discord's
rules for a webhook's name, visible, so it reads as it is, and not another's name in letters
that only look alike. Each check raises `ConfigError` saying why not."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from tomori.config.parsers import ConfigError

MAX_NAME_CHARS = 80
"""Discord's longest webhook username."""
MAX_TRIGGERS = 10
MAX_TRIGGER_CHARS = 50
MAX_AVATAR_URL_CHARS = 2_000
_FORBIDDEN_IN_NAMES = ("@", "#", ":", "```")
_RESERVED_NAMES = ("everyone", "here")
_RESERVED_WORDS = ("discord", "clyde")
"""Discord refuses a webhook username that contains these (whatever their case)."""


def invisible(text: str) -> bool:
    """Whether `text` holds a control or format character (a zero-width space, a right-to-left
    override): what no one can type, or what makes text read other than it is."""
    return any(unicodedata.category(character) in ("Cc", "Cf") for character in text)


_LOOK_ALIKE = str.maketrans(
    # Cyrillic and Greek letters drawn as Latin ones (written as escapes: they look alike)
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04cf"
    "\u043a\u043c\u0442\u0432\u043d\u03b1\u03bf\u03c1\u03c4\u03b9\u03ba\u03bd"
    # digits and marks read as letters, and i: see `skeleton`
    "013457|!i",
    "aeopcyxljsdlkmtbhaoptlkvoleastlll",
)


def skeleton(name: str) -> str:
    """What `name` looks like, whatever letters spell it: compatibility forms folded (NFKC:
    full-width and styled letters), case and accents dropped, letters that look alike made
    one, spaces and punctuation between them gone ("c.l.y.d.e", or Clyde spelt with a Cyrillic
    y and e, or in full-width letters, is "clyde").

    i and l are one letter here: a capital I reads as an l ("AIice" as "Alice") and case is
    dropped, so I, i, l (and 1, |) must all look the same. A few names that differ only so
    are refused as alike: the price of never letting "AIice" pass.

    An ASCII name (most of them) is read by one table lookup per character, built from the
    rule below, so a server's thousands of members' names cost little (`passes_for_any`)."""
    if name.isascii():
        return name.encode().translate(_ASCII_LOOKS, _ASCII_UNSEEN).decode()
    return _skeleton(name)


def _skeleton(name: str) -> str:
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name).casefold())
    plain = "".join(c for c in folded if not unicodedata.combining(c)).translate(_LOOK_ALIKE)
    return "".join(c for c in plain if c.isalnum())


def _ascii_tables() -> tuple[bytes, bytes]:
    """`_skeleton` of each ASCII character, as `bytes.translate` takes it: the byte each
    becomes, and those it drops (an ASCII name's skeleton is its characters', one by one)."""
    looks, unseen = bytearray(range(256)), bytearray()
    for code in range(128):
        seen = _skeleton(chr(code))
        if seen:
            looks[code] = ord(seen)
        else:
            unseen.append(code)
    return bytes(looks), bytes(unseen)


_ASCII_LOOKS, _ASCII_UNSEEN = _ascii_tables()


def composed(text: str) -> str:
    """`text` with its accents composed (NFC): "Zoë" typed as "e" and a combining mark is the
    same name, and calls the same persona, as "Zoë" typed as one letter."""
    return unicodedata.normalize("NFC", text)


def check_name(raw: str) -> str:
    """A persona's name as Discord takes a webhook's username; `ConfigError` says why not.

    Invisible characters (controls, and format characters such as a zero-width space or a
    right-to-left override) are refused: a name no one can type could never be called, and
    one that reads as another would pass for it."""
    name = composed(" ".join(raw.split()))
    if not name:
        raise ConfigError("the name is empty: give the persona a name")
    if invisible(name):
        raise ConfigError("the name holds an invisible character: type it as it should read")
    if "," in name:
        raise ConfigError("a name cannot hold a comma: /scene lists personas comma separated")
    if len(name) > MAX_NAME_CHARS:
        raise ConfigError(f"the name is {len(name)} characters long: at most {MAX_NAME_CHARS}")
    lowered, looks = name.casefold(), skeleton(name)
    if lowered in _RESERVED_NAMES or any(looks == skeleton(r) for r in _RESERVED_NAMES):
        raise ConfigError(f'"{name}" cannot be a name on Discord')
    for part in _FORBIDDEN_IN_NAMES:
        if part in lowered:
            raise ConfigError(f'Discord does not allow "{part}" in a name shown for a webhook')
    for word in _RESERVED_WORDS:
        if skeleton(word) in looks:  # in any letters that look like it
            raise ConfigError(f'Discord does not allow "{word}" in a name shown for a webhook')
    return name


def passes_for(name: str, other: str) -> bool:
    """Whether persona name `name` would read as `other` (the bot's own name, say)."""
    return passes_for_any(name, (other,))


def passes_for_any(name: str, others: Iterable[str]) -> bool:
    """Whether persona name `name` would read as any of `others` (a server's members' names).

    One skeleton for `name`, then one per distinct other name (an ASCII one in a table lookup
    per character), stopping at the first alike: a server's 100,000 names take about a tenth
    of a second. A name with nothing visible to compare (all emoji, say) passes for none."""
    looks = skeleton(name)
    return bool(looks) and any(skeleton(other) == looks for other in set(others))


def check_triggers(raw: str) -> tuple[str, ...]:
    """Comma-separated trigger words, each trimmed, without repeats (case aside)."""
    words: dict[str, str] = {}
    for part in raw.split(","):
        word = composed(" ".join(part.split()))
        if word:
            words.setdefault(word.casefold(), word)
    if len(words) > MAX_TRIGGERS:
        raise ConfigError(f"{len(words)} trigger words: at most {MAX_TRIGGERS}")
    for word in words.values():
        if invisible(word):
            raise ConfigError("a trigger holds an invisible character: type it as it should read")
        if len(word) > MAX_TRIGGER_CHARS:
            raise ConfigError(f'the trigger "{word[:20]}…" is longer than {MAX_TRIGGER_CHARS}')
    return tuple(words.values())


def check_avatar_url(raw: str) -> str:
    url = raw.strip()
    if not re.fullmatch(r"https?://\S+", url) or len(url) > MAX_AVATAR_URL_CHARS:
        raise ConfigError("the avatar must be an image's http(s) URL")
    return url
