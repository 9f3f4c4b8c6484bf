"""The image bytes this process's turns hold at once, within `TOMORI_IMAGE_BYTES_IN_FLIGHT`.

A turn keeps the images it read for the model (its history's and its trigger's) until it ends:
each of its passes, and each fallback model, is sent the same bytes. One turn holds at most
`TOMORI_MAX_IMAGES` images of at most `TOMORI_MAX_IMAGE_BYTES` each, but a burst of turns across
the bot's channels would hold all of theirs at once, and each request carries them again,
base64-encoded. So an image's bytes are reserved before it is read (its declared size, or the
bound when none is declared), kept at its real size once read, and given back when its turn
ends. An image that does not fit now is left out, and the model told so, rather than waited for:
the turns holding the bytes keep them for as long as they answer.
"""

from __future__ import annotations


class ImageBytes:
    """The process's budget of image bytes, and what its turns hold of it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def hold(self) -> ImageHold:
        """What one turn will hold: nothing yet."""
        return ImageHold(self)


class ImageHold:
    """The image bytes one turn holds; `release` gives back all of them when it ends."""

    __slots__ = ("_budget", "_held")

    def __init__(self, budget: ImageBytes) -> None:
        self._budget = budget
        self._held = 0

    def reserve(self, size: int) -> bool:
        """Hold `size` more bytes, if the process's budget has them now."""
        budget = self._budget
        if budget.held + size > budget.limit:
            return False
        budget.held += size
        self._held += size
        return True

    def give_back(self, size: int) -> None:
        """Give back `size` of the bytes held (an image smaller than reserved, or not kept)."""
        size = min(size, self._held)
        self._held -= size
        self._budget.held -= size

    def release(self) -> None:
        self.give_back(self._held)
