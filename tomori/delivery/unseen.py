"""Characters a reader does not see: the one rule for what a name may not hold and what a
prompt must show as an escape.

Controls and formats (a zero-width space, a right-to-left override), every space but the plain
one, line and paragraph separators, unassigned, private and surrogate code points; then what
Unicode calls default-ignorable though it files it as a letter or a mark (the Hangul fillers,
variation selectors, the combining grapheme joiner, Khmer's inherent vowels, Mongolian's
selectors, musical formatting), and the characters fonts draw blank (the braille blank, the
object replacement character). A Hangul filler after a persona's name made it read as the
bot's own on Discord.
"""

from __future__ import annotations

import unicodedata

_UNSEEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp", "Zs"})
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors and vowel separator
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0x1D173, 0x1D17A),  # musical symbol formatting
    (0xE0100, 0xE01EF),  # variation selectors supplement
)
_DRAWN_BLANK = frozenset({"\u2800", "\ufffc"})


def unseen(character: str) -> bool:
    """Whether `character` shows nothing, or changes how the text around it shows (see the
    module); the plain space is seen."""
    if character == " ":
        return False
    if unicodedata.category(character) in _UNSEEN_CATEGORIES or character in _DRAWN_BLANK:
        return True
    code = ord(character)
    return any(low <= code <= high for low, high in _IGNORABLE_RANGES)


def holds_unseen(text: str) -> bool:
    return any(unseen(character) for character in text)
