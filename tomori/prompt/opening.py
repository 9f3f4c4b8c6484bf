"""What a prefilled answer begins with: the prefill, exactly once.

A model sent a native prefill usually goes on after it, but some write it again first; a model
told in words to begin with it may write it or not. Whatever the model writes, the posted answer
begins with the prefill once: an echo of it (after any leading whitespace) is posted as the
model wrote it, and anything else is posted after the prefill. `opened` is that rule, written
here alone; `OpeningReader` applies it to a pass's text as it streams, holding back only what
may still grow into an echo, so the answer is the same whatever the chunks' boundaries.
"""

from __future__ import annotations

from tomori.prompt.prefill import Prefill


def opened(prefill: str, text: str) -> str:
    """The answer a model's whole `text` becomes: it begins with `prefill` exactly once (an
    answer with nothing but whitespace stays empty: there is nothing to begin)."""
    if not text.strip():
        return ""
    stripped = text.lstrip()
    return stripped if stripped.startswith(prefill) else prefill + text


def _undecided(prefill: str, text: str) -> bool:
    """Whether `text` may still become an echo of `prefill` as more of it comes."""
    stripped = text.lstrip()
    return prefill.startswith(stripped) and not stripped.startswith(prefill)


class Opening:
    """One answer's prefill, and whether the answer has begun.

    Shared by every pass and every model of the answer: once its text has begun (with the
    prefill), later passes and fallbacks go on from it, so nothing is put before their text
    and no request carries the prefill any more (`prefill.without_prefill`)."""

    def __init__(self, prefill: Prefill) -> None:
        self.prefill = prefill
        self.begun = False

    def reader(self) -> OpeningReader:
        """What one pass feeds its visible text through."""
        return OpeningReader(self)


class OpeningReader:
    """One pass's visible text on its way to the channel, begun by `opened`'s rule."""

    def __init__(self, opening: Opening) -> None:
        self._opening = opening
        self._held = ""

    def feed(self, text: str) -> str:
        """What of the text so far can be posted now ("" while it may still be an echo)."""
        if self._opening.begun:
            return text
        held = self._held + text
        if _undecided(self._opening.prefill.text, held):
            self._held = held
            return ""
        return self._begin(held)

    def finish(self) -> str:
        """The pass's text ended: what was held is no echo (it stopped short of the prefill)."""
        if self._opening.begun or not self._held.strip():
            self._held = ""
            return ""
        return self._begin(self._held)

    def _begin(self, text: str) -> str:
        self._held = ""
        self._opening.begun = True
        return opened(self._opening.prefill.text, text)
