"""What every name and word of the cast must be, checked before it is stored: within Discord's
rules for a webhook's name, visible, so it reads as it is, and not another's name in letters
that only look alike. Each check raises `ConfigError` saying why not."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from tomori.config.parsers import ConfigError
from tomori.delivery.unseen import holds_unseen

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
    """Whether `text` holds a character a reader does not see (`tomori.delivery.unseen`: a
    zero-width space, a right-to-left override, a Hangul filler, a space but the plain one):
    what makes a name read other than it is."""
    return holds_unseen(text)


LOOK_ALIKE_LETTERS: tuple[tuple[str, str], ...] = (
    # Letters of other scripts drawn as Latin ones, by their Unicode names, each as case
    # folding leaves it (a name is case-folded first): the source of truth is Unicode's own
    # list of look-alikes, confusables.txt (UTS #39, Unicode security mechanisms), whose row
    # for each gives the Latin letter it is confusable with. Only the letters of scripts a
    # name on Discord is likely to borrow are here; tests/cast/test_names.py cites each row.
    ("CYRILLIC SMALL LETTER A", "a"),
    ("CYRILLIC SMALL LETTER IE", "e"),
    ("CYRILLIC SMALL LETTER O", "o"),
    ("CYRILLIC SMALL LETTER ER", "p"),
    ("CYRILLIC SMALL LETTER ES", "c"),
    ("CYRILLIC SMALL LETTER U", "y"),
    ("CYRILLIC SMALL LETTER HA", "x"),
    ("CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I", "i"),
    ("CYRILLIC SMALL LETTER JE", "j"),
    ("CYRILLIC SMALL LETTER DZE", "s"),
    ("CYRILLIC SMALL LETTER KOMI DE", "d"),
    ("CYRILLIC SMALL LETTER PALOCHKA", "i"),
    ("CYRILLIC SMALL LETTER KA", "k"),  # the capitals below look alike; case is dropped
    ("CYRILLIC SMALL LETTER EM", "m"),
    ("CYRILLIC SMALL LETTER TE", "t"),
    ("CYRILLIC SMALL LETTER VE", "b"),
    ("CYRILLIC SMALL LETTER EN", "h"),
    ("GREEK SMALL LETTER ALPHA", "a"),
    ("GREEK SMALL LETTER OMICRON", "o"),
    ("GREEK SMALL LETTER RHO", "p"),
    ("GREEK SMALL LETTER TAU", "t"),
    ("GREEK SMALL LETTER IOTA", "i"),
    ("GREEK SMALL LETTER KAPPA", "k"),
    ("GREEK SMALL LETTER NU", "v"),
    # Cherokee has capitals only, as far as case folding goes: its small letters fold to them
    ("CHEROKEE LETTER A", "d"),
    ("CHEROKEE LETTER E", "r"),
    ("CHEROKEE LETTER I", "t"),
    ("CHEROKEE LETTER V", "i"),
    ("CHEROKEE LETTER GI", "y"),
    ("CHEROKEE LETTER GO", "a"),
    ("CHEROKEE LETTER GU", "j"),
    ("CHEROKEE LETTER GV", "e"),
    ("CHEROKEE LETTER LA", "w"),
    ("CHEROKEE LETTER LU", "m"),
    ("CHEROKEE LETTER MI", "h"),
    ("CHEROKEE LETTER MU", "y"),
    ("CHEROKEE LETTER NAH", "g"),
    ("CHEROKEE LETTER NI", "h"),
    ("CHEROKEE LETTER NO", "z"),
    ("CHEROKEE LETTER SI", "b"),
    ("CHEROKEE LETTER SV", "r"),
    ("CHEROKEE LETTER TA", "w"),
    ("CHEROKEE LETTER DE", "s"),
    ("CHEROKEE LETTER DO", "v"),
    ("CHEROKEE LETTER DU", "s"),
    ("CHEROKEE LETTER TLE", "l"),
    ("CHEROKEE LETTER TLI", "c"),
    ("CHEROKEE LETTER TLV", "p"),
    ("CHEROKEE LETTER TSO", "k"),
    ("CHEROKEE LETTER TSU", "d"),
    ("CHEROKEE LETTER YU", "g"),
    ("CHEROKEE LETTER YV", "b"),
    # Letters of Latin's own and of other scripts drawn as plain Latin ones
    ("LATIN SMALL LETTER DOTLESS I", "i"),
    ("LATIN SMALL LETTER ALPHA", "a"),
    ("LATIN SMALL LETTER V WITH HOOK", "v"),
    ("ARMENIAN SMALL LETTER OH", "o"),
    ("LISU LETTER TA", "t"),
    ("CANADIAN SYLLABICS KO", "d"),
    # Latin small capitals (ᴛᴏᴍᴏʀɪ): a capital drawn small is its letter once case is dropped,
    # as each one's name says; confusables.txt lists only those that pass for a small letter
    *(
        (f"LATIN LETTER SMALL CAPITAL {letter.upper()}", letter)
        for letter in "abcdefghijklmnopqrstuvwyz"  # Unicode has no small capital X
    ),
)
"""Each letter (by its Unicode name) that reads as a Latin letter, and that letter."""

_READ_AS = dict(zip("013457|!i", "oleastlll", strict=True))
"""Digits and marks read as letters, and i as l: see `skeleton`."""
_LOOK_ALIKE = str.maketrans(
    {unicodedata.lookup(name): _READ_AS.get(latin, latin) for name, latin in LOOK_ALIKE_LETTERS}
    | _READ_AS
)
_LOOK_ALIKE_PAIRS = (("rn", "m"), ("vv", "w"), ("cl", "d"))
"""Two letters read as one, as confusables.txt has them ("rn" for m): "Tornori" is Tomori."""


def skeleton(name: str) -> str:
    """What `name` looks like, whatever letters spell it: compatibility forms folded (NFKC:
    full-width and styled letters), case and accents dropped, letters that look alike made
    one (`LOOK_ALIKE_LETTERS`, and pairs such as "rn" that read as one), spaces and
    punctuation between them gone ("c.l.y.d.e", or Clyde spelt with a Cyrillic y and e, or in
    full-width letters, is "clyde"'s skeleton).

    i and l are one letter here: a capital I reads as an l ("AIice" as "Alice") and case is
    dropped, so I, i, l (and 1, |) must all look the same. A few names that differ only so
    are refused as alike: the price of never letting "AIice" pass.

    An ASCII name (most of them) is read by one table lookup per character, built from the
    rule below, so a server's thousands of members' names cost little (`passes_for_any`)."""
    if name.isascii():
        letters = name.encode().translate(_ASCII_LOOKS, _ASCII_UNSEEN).decode()
    else:
        letters = _letters(name)
    for pair, letter in _LOOK_ALIKE_PAIRS:
        letters = letters.replace(pair, letter)
    return letters


def _letters(name: str) -> str:
    """`name`'s letters and digits, each as the one it looks like (see `skeleton`)."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name).casefold())
    plain = "".join(c for c in folded if not unicodedata.combining(c)).translate(_LOOK_ALIKE)
    return "".join(c for c in plain if c.isalnum())


def _ascii_tables() -> tuple[bytes, bytes]:
    """`_letters` of each ASCII character, as `bytes.translate` takes it: the byte each
    becomes, and those it drops (an ASCII name's letters are its characters', one by one)."""
    looks, unseen = bytearray(range(256)), bytearray()
    for code in range(128):
        seen = _letters(chr(code))
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


_BOTISH_WORDS = ("bot", "app", "official", "real", "the", "ai", "assistant")
"""Words that, around the bot's name, still read as the bot ("Tomori Bot", "The Real Tomori")."""
_BOTISH_LOOKS = tuple(skeleton(word) for word in _BOTISH_WORDS)


def passes_for_the_bot(name: str, bot_name: str) -> bool:
    """Whether persona name `name` would read as the bot `bot_name`: alike (`skeleton`), or
    the bot's name with bot-ish words around it, in any order and punctuation ("Tomori-bot",
    "Tomori (APP)", "the real Tomori"). Discord's and Clyde's names are refused in any name
    (`check_name`)."""
    looks = skeleton(bot_name)
    return bool(looks) and any(looks in _unwrapped(seen) for seen in _readings(name))


def _unwrapped(looks: str) -> set[str]:
    """The skeleton `looks` with bot-ish words taken from its start and its end, every way
    they can be: each a piece of `looks`, so a name of 80 characters has few."""
    found, todo = {looks}, [looks]
    while todo:
        current = todo.pop()
        for word in _BOTISH_LOOKS:
            for rest in (current.removeprefix(word), current.removesuffix(word)):
                if rest not in found:
                    found.add(rest)
                    todo.append(rest)
    return found


def passes_for_any(name: str, others: Iterable[str]) -> bool:
    """Whether persona name `name` would read as any of `others` (a server's members' names).

    One skeleton for `name`, then one per distinct other name (an ASCII one in a table lookup
    per character), stopping at the first alike: a server's 100,000 names take about a tenth
    of a second. A name with nothing visible to compare (all emoji, say) passes for none."""
    readings = _readings(name)
    return bool(readings) and any(skeleton(other) in readings for other in set(others))


def _readings(name: str) -> set[str]:
    """What `name` may be read as: its skeleton, and the skeleton of its letters alone, marks,
    symbols and digits between and around them dropped ("Tomori!", "dave 1", "Tomori™",
    "Tomori | bot"); each compared, so a digit spelling a letter ("T0m0r1") still counts."""
    letters = "".join(c for c in name if unicodedata.category(c)[0] in "LM")
    return {seen for seen in (skeleton(name), skeleton(letters)) if seen}


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
