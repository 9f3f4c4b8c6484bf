"""Scene turns: a scripted exchange between two or three of a server's personas (`/scene`).

Each cycle, each persona of the cast speaks once, in the order named: it is told, in a
request-only notice, that it writes only its own next message, and it sees everything said
before it (the channel, then the scene's lines so far: its own as the assistant's turns, the
others' under their names). A scene is one turn of its channel's lock, so it waits behind the
channel's running turn and what arrives meanwhile waits behind it; `/kill` ends it.

Nothing here knows Discord: the cog and the console check a scene with `cast_scene`, carry it
in their lock's trigger (in a `tomori.turns.TurnRequest`, so a queued scene survives a
restart) and play its lines (`Scene.lines`) with `speaker_notice` and `heard`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tomori.cast.personas import Persona, name_key
from tomori.config.parsers import ConfigError
from tomori.delivery.notices import Notice, NoticeColour
from tomori.providers.base import ContextItem, Role
from tomori.words import Listed, Said, Text, said

MIN_CAST = 2
MAX_CAST = 3
MIN_CYCLES = 1
MAX_CYCLES = 10
MAX_INSTRUCTIONS_CHARS = 1_000
"""Sent with every line of the scene (up to 30): a premise, not a script."""

SCENES_OFF = said("scene.off")
SCENE_DROPPED = Notice.of(
    said("title.scene_not_played"), said("scene.dropped"), NoticeColour.WARNING
)


def scene_refused(description: Text) -> Notice:
    """Why a `/scene` does not run, told only to whoever asked (a text of its own, a cast's
    error, begins with a capital)."""
    if isinstance(description, str):
        description = description[:1].upper() + description[1:]
    return Notice.of(said("title.no_scene"), description, NoticeColour.ERROR)


def scene_accepted(scene: Scene, names: Mapping[str, str], *, queued: bool) -> Notice:
    """What whoever asked is told once the scene is the channel's turn, or waits for it."""
    cast = Listed(tuple(names.get(key, key) for key in scene.cast))
    cycles: Said = said("scene.cycle" if scene.cycles == 1 else "scene.cycles", count=scene.cycles)
    description = said("scene.waits" if queued else "scene.begins", cast=cast, cycles=cycles)
    return Notice.of(said("title.scene"), description, NoticeColour.SUCCESS)


@dataclass(frozen=True, slots=True)
class Scene:
    cast: tuple[str, ...]
    """The personas' name keys, in speaking order."""
    cycles: int
    instructions: str = ""

    def lines(self) -> list[tuple[int, str]]:
        """(cycle, persona key) of each line, in the order they are spoken (cycles from 1)."""
        return [(cycle, key) for cycle in range(1, self.cycles + 1) for key in self.cast]


def named_in(raw: str) -> list[str]:
    """The names a `personas` option gives: comma separated; without a comma, each word."""
    parts = raw.split(",") if "," in raw else raw.split()
    return [" ".join(part.split()) for part in parts if part.strip()]


def cast_scene(
    names: str, cycles: int, instructions: str | None, personas: Iterable[Persona]
) -> Scene:
    """The scene asked for, checked against the server's personas; `ConfigError` says why not."""
    by_key = {persona.key: persona for persona in personas}
    given = named_in(names)
    if len(given) < MIN_CAST or len(given) > MAX_CAST:
        raise ConfigError(
            f"a scene has {MIN_CAST} or {MAX_CAST} personas, comma separated; "
            f"{len(given)} {'was' if len(given) == 1 else 'were'} named"
        )
    keys = [name_key(name) for name in given]
    unknown = [name for name, key in zip(given, keys, strict=True) if key not in by_key]
    if unknown:
        raise ConfigError(
            f"this server has no persona named {', '.join(unknown)}: "
            "/tomori persona list shows them"
        )
    if len(set(keys)) < len(keys):
        raise ConfigError("name each persona of the scene once")
    if not MIN_CYCLES <= cycles <= MAX_CYCLES:
        raise ConfigError(f"cycles must be from {MIN_CYCLES} to {MAX_CYCLES}, not {cycles}")
    text = " ".join((instructions or "").split())
    if "\0" in text:
        raise ConfigError("the instructions hold a NUL character: remove it")
    if len(text) > MAX_INSTRUCTIONS_CHARS:
        raise ConfigError(
            f"the instructions are {len(text)} characters long: at most {MAX_INSTRUCTIONS_CHARS}"
        )
    return Scene(tuple(keys), cycles, text)


def speaker_notice(
    scene: Scene, speaker: Persona, cycle: int, names: Mapping[str, str]
) -> ContextItem:
    """What a persona is told before its line, in its request only (never in the history)."""
    others = [names.get(key, key) for key in scene.cast if key != speaker.key]
    lines = [
        f"[Scene, cycle {cycle} of {scene.cycles}] You are {speaker.name}, in a scene with "
        f"{' and '.join(others)}. Write only {speaker.name}'s next message: one turn of the "
        "dialogue, without your name before it, and never the others' lines."
    ]
    if scene.instructions:
        lines.append(f"The scene: {scene.instructions}")
    return ContextItem(Role.USER, "\n".join(lines))


def heard(said: Sequence[tuple[Persona, str]], speaker: Persona) -> tuple[ContextItem, ...]:
    """What personas said earlier in the turn, as `speaker` sees it: its own lines as the
    assistant's turns, the others' under their names."""
    return tuple(
        ContextItem(Role.ASSISTANT, text, pinned=True)
        if earlier.key == speaker.key
        else ContextItem(Role.USER, f"{earlier.name}: {text}", pinned=True)
        for earlier, text in said
        if text.strip()
    )
