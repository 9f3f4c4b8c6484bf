"""What every name and word of the cast must be: visible, so it reads as it is."""

from __future__ import annotations

import unicodedata


def invisible(text: str) -> bool:
    """Whether `text` holds a control or format character (a zero-width space, a right-to-left
    override): what no one can type, or what makes text read other than it is."""
    return any(unicodedata.category(character) in ("Cc", "Cf") for character in text)
