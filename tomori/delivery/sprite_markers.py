"""Sprite markers: how a persona's answer says which of its avatars a part of it is shown with.

A persona with sprites (labelled alternate avatars) switches by starting a line with
`Name (label):`, and back to its own avatar with `Name:`. `SpriteMarkers` finds those markers
in streamed text and takes them out, whatever the chunks: the same text gives the same pieces
however it is cut, and the text it returns with the markers it took out is exactly the text it
was given. The rule, in one place:

- a marker is the persona's name (any case), then ` (label)` (the space optional) or nothing,
  then `:`, then any spaces or tabs, all of which the marker takes;
- only at the start of a line, and never inside a code block (a line that begins with the
  name inside ``` fences is code, shown as written);
- a label the persona does not have, or anything else, is text, shown as written.

The writer (`tomori.delivery.writer`) starts a new message at each marker that changes the
sprite and has the port show what follows with the sprite's avatar; nothing here knows Discord.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tomori.delivery.fences import fence_line

MAX_LABEL_CHARS = 32
"""The longest label: a marker longer than this is text, so a line is not held back for long."""


def label_key(label: str) -> str:
    """What a label is unique as, within its persona: its case and spacing do not count."""
    return " ".join(label.split()).casefold()


@dataclass(frozen=True, slots=True)
class SpriteSwitch:
    """A marker: what follows is shown with sprite `label` (None: the persona's own avatar)."""

    label: str | None
    marker: str
    """The text the marker took out of the answer."""


Piece = str | SpriteSwitch


class SpriteMarkers:
    """Takes a persona's sprite markers out of its streamed answer (see the module)."""

    def __init__(self, name: str, labels: Iterable[str]) -> None:
        self._name = name
        self._labels = {label_key(label): label for label in labels}
        self._line = ""
        """The current line so far: at its end, whether it opens or closes a code block."""
        self._held: str | None = ""
        """The start of the current line while it may still be a marker; None once it cannot."""
        self._in_code = False

    def feed(self, text: str) -> list[Piece]:
        """Add text; return the pieces now decided, in order (text not decided is held)."""
        pieces: list[Piece] = []
        while text:
            newline = text.find("\n")
            part, text = (text, "") if newline < 0 else (text[: newline + 1], text[newline + 1 :])
            ended = part.endswith("\n")
            body = part[:-1] if ended else part
            self._line += body
            if self._held is None:
                pieces.append(part)
            else:
                self._held += body
                self._decide(pieces, ended)
                if ended:
                    pieces.append("\n")
            if ended:
                self._end_line()
        return _joined(pieces)

    def finish(self) -> list[Piece]:
        """The answer ended: what is held, decided (a marker needs nothing after it)."""
        pieces: list[Piece] = []
        if self._held:
            self._decide(pieces, True)
        self.drop()
        return pieces

    def drop(self) -> None:
        """Forget the unfinished line held (the stream stopped in it), and start afresh."""
        self._line, self._held, self._in_code = "", "", False

    def _end_line(self) -> None:
        if fence_line(self._line) is not None:
            self._in_code = not self._in_code
        self._line = ""
        self._held = None if self._in_code else ""

    def _decide(self, pieces: list[Piece], ended: bool) -> None:
        assert self._held is not None
        found = self._marker(self._held, ended)
        if found is None:
            return  # more text decides it
        length, label = found
        held, self._held = self._held, None
        if length:
            pieces.append(SpriteSwitch(label, held[:length]))
        if held[length:]:
            pieces.append(held[length:])

    def _marker(self, held: str, ended: bool) -> tuple[int, str | None] | None:
        """How long the marker `held` starts with (0: none) and its label; None while more
        text could still decide it (`ended`: no more comes on this line)."""
        text = (0, None)
        undecided = text if ended else None
        name = self._name
        if any(a.lower() != b.lower() for a, b in zip(held, name, strict=False)):
            return text
        if len(held) <= len(name):
            return undecided
        at = len(name)
        if held[at] == ":":
            return self._spaces_after(held, at + 1, None, ended)
        if held[at] == " ":
            at += 1
            if at == len(held):
                return undecided
        if held[at] != "(":
            return text
        closing = held.find(")", at)
        if closing < 0:
            return text if len(held) - at > MAX_LABEL_CHARS + 1 else undecided
        if closing - at > MAX_LABEL_CHARS + 1:
            return text  # as it is while its end has not come
        label = self._labels.get(label_key(held[at + 1 : closing]))
        if label is None:
            return text
        if closing + 1 == len(held):
            return undecided
        if held[closing + 1] != ":":
            return text
        return self._spaces_after(held, closing + 2, label, ended)

    @staticmethod
    def _spaces_after(
        held: str, at: int, label: str | None, ended: bool
    ) -> tuple[int, str | None] | None:
        end = at
        while end < len(held) and held[end] in " \t":
            end += 1
        if end == len(held) and not ended:
            return None  # more spaces may come: the marker takes them all
        return end, label


def _joined(pieces: list[Piece]) -> list[Piece]:
    """Adjacent text pieces as one."""
    joined: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str) and joined and isinstance(joined[-1], str):
            joined[-1] += piece
        elif piece != "":
            joined.append(piece)
    return joined


@dataclass(frozen=True, slots=True)
class Wardrobe:
    """A persona's sprites as its writer sees them: the name its markers use, its labels, and
    how the port is told which one the next messages wear (None: the persona's own avatar)."""

    name: str
    labels: tuple[str, ...]
    wear: Callable[[str | None], None]

    def markers(self) -> SpriteMarkers:
        return SpriteMarkers(self.name, self.labels)

    def shown(self, label: str) -> str:
        """How a sprite shown is recorded in a pass's `sprites` (and counted by status)."""
        return sprite_name(self.name, label)


def wore_sprite(name: str, shown: str) -> bool:
    """Whether a persona's message shown under `shown` wore one of its sprites (`sprite_name`):
    its model then reads it back as `Name (label): text`, the way it switched."""
    return shown.startswith(f"{name} (") and shown.endswith(")")


def sprite_name(name: str, label: str | None) -> str:
    """The name a persona's message shows while it wears a sprite: `Name (label)`, its own
    name for its own avatar. Each avatar has its own name, so Discord, which groups a
    webhook's consecutive messages by name whatever their avatar, shows every change."""
    return name if label is None else f"{name} ({label})"
