"""Who said each line the model reads, told apart when their names look alike.

The model is shown each message under its author's name (`spoken`), and on Discord a member
chooses the name shown: Bob nicknamed "alice" would read as Alice, line for line. So within
what one request shows, a speaker whose name could be confused with another's is shown under
a handle first, then the name in brackets: a Discord user's username, which Discord keeps
unique and no member can change into another's (`@bob (alice)`, `@alice (alice)`). The name
only ever comes after the handle, so no name, however it is written ("alice (@alice)"), can
reach the place where the handle stands.

Names are compared by their skeletons (`tomori.cast.names.skeleton`: case, accents, spaces,
punctuation and look-alike letters dropped): two speakers' names are alike when either holds
the other ("alice" and "alice (real)", "Alice ✓"), or when one holds the other's username. A
name holding "@" could pass for a handle itself, so it is always shown behind its own. Where
no two names are alike, each speaker is shown under their name alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from tomori.cast.names import skeleton
from tomori.prompt.conversation import spoken
from tomori.providers.base import ContextItem, Image, Role


@dataclass(frozen=True, slots=True)
class Speaker:
    """One author of lines the model is shown, under one name."""

    key: str
    """Who it is, whatever it is called: a user's ID, a persona's name key."""
    name: str
    """The name the channel shows it under (a member's nickname or global name)."""
    username: str | None = None
    """Its Discord username (with its #discriminator where it still has one), unique on
    Discord; None for a post no account of its own is behind (a webhook's, a persona's)."""
    kind: str = "webhook"
    """What a speaker with no username is, shown as its handle: "webhook", "persona"."""

    @property
    def handle(self) -> str:
        return self.kind if self.username is None else f"@{self.username}"


@dataclass(frozen=True, slots=True)
class Said:
    """A message as the model is shown it, its speaker still to be named: `speaker` None for
    the answering voice's own lines, shown as they are."""

    role: Role
    text: str
    speaker: Speaker | None = None
    images: tuple[Image, ...] = ()
    files_at: int | None = None
    """Where its attachments' text begins in `text` (`ContextItem.files_at`)."""


def named(said: Sequence[Said], answering: Iterable[Speaker] = ()) -> tuple[ContextItem, ...]:
    """Each of `said` as the model reads it, under its speaker's label (`labels`); the
    `answering` voice (the bot, or a persona) is compared too, so no one passes for it."""
    shown = labels([*answering, *(line.speaker for line in said if line.speaker is not None)])
    return tuple(
        ContextItem(
            line.role,
            line.text if line.speaker is None else spoken(shown[line.speaker], line.text),
            line.images,
            files_at=_files_at(line, shown),
        )
        for line in said
    )


def _files_at(line: Said, shown: Mapping[Speaker, str]) -> int | None:
    """Where `line`'s attachments begin once it is said under its speaker's label: `spoken`
    writes its text's start as it writes the whole."""
    if line.files_at is None or line.speaker is None:
        return line.files_at
    return len(spoken(shown[line.speaker], line.text[: line.files_at]))


def labels(speakers: Iterable[Speaker]) -> Mapping[Speaker, str]:
    """The label each of `speakers` is shown under: its name, or `handle (name)` when its
    name is alike another speaker's, or holds "@" (see the module docstring)."""
    distinct = list(dict.fromkeys(speakers))
    names = [_looks(speaker.name) for speaker in distinct]
    usernames = [skeleton(speaker.username or "") for speaker in distinct]
    apart = {n for n, speaker in enumerate(distinct) if "@" in speaker.name}
    for one, other in combinations(range(len(distinct)), 2):
        if distinct[one].key != distinct[other].key and (
            _holds(names[one], names[other])
            or _holds(names[other], names[one])
            or _holds(names[one], usernames[other])
            or _holds(names[other], usernames[one])
        ):
            apart |= {one, other}
    return {
        speaker: f"{speaker.handle} ({speaker.name})" if n in apart else speaker.name
        for n, speaker in enumerate(distinct)
    }


def _looks(name: str) -> str:
    """What `name` looks like: its skeleton, or, with no letter or digit in it (all emoji),
    the name itself, case and spacing aside."""
    return skeleton(name) or " ".join(name.casefold().split())


def _holds(name: str, part: str) -> bool:
    return bool(part) and part in name
