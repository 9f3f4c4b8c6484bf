"""What every name and word of the cast must be: visible, so it reads as it is, and not
another's name in letters that only look alike."""

from __future__ import annotations

import unicodedata


def invisible(text: str) -> bool:
    """Whether `text` holds a control or format character (a zero-width space, a right-to-left
    override): what no one can type, or what makes text read other than it is."""
    return any(unicodedata.category(character) in ("Cc", "Cf") for character in text)


_LOOK_ALIKE = str.maketrans(
    # Cyrillic and Greek letters drawn as Latin ones (written as escapes: they look alike)
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04cf"
    "\u043a\u043c\u0442\u0432\u043d\u03b1\u03bf\u03c1\u03c4\u03b9\u03ba\u03bd"
    # digits and marks read as letters
    "013457|!",
    "aeopcyxijsdlkmtbhaoptikvoleastli",
)


def skeleton(name: str) -> str:
    """What `name` looks like, whatever letters spell it: compatibility forms folded (NFKC:
    full-width and styled letters), case and accents dropped, letters that look alike made
    one, spaces and punctuation between them gone ("c.l.y.d.e", or Clyde spelt with a Cyrillic
    y and e, or in full-width letters, is "clyde")."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name).casefold())
    plain = "".join(c for c in folded if not unicodedata.combining(c)).translate(_LOOK_ALIKE)
    return "".join(c for c in plain if c.isalnum())
