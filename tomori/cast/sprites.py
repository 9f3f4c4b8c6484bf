"""Sprites: a persona's labelled alternate avatars, and what its model is told of them.

An admin adds them with `/tomori sprite add` (at most `MAX_SPRITES` a persona, each an image
URL under a label unique within the persona, whatever its case); they are kept in the shared
database beside the personas (migration 0012, `SpriteStore`). The persona's model is told its
labels and how to switch (`instructions`); the marker rule itself is
`tomori.delivery.sprite_markers`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tomori.cast.names import invisible
from tomori.config.parsers import ConfigError
from tomori.delivery.sprite_markers import MAX_LABEL_CHARS, Wardrobe, label_key, sprite_name
from tomori.store import Database

MAX_SPRITES = 20
"""Per persona: all of them are listed in its system prompt, which stays short."""
MAX_USERNAME_CHARS = 80
"""Discord's longest webhook username: `Name (label)` must fit it."""

_FORBIDDEN_IN_LABELS = ("(", ")", ":", "@", "#", "`", "\n")
_RESERVED_WORDS = ("discord", "clyde")


@dataclass(frozen=True, slots=True)
class Sprite:
    label: str
    avatar_url: str

    @property
    def key(self) -> str:
        return label_key(self.label)


def check_label(persona_name: str, raw: str) -> str:
    """A sprite's label as its marker and the name Discord shows take it; `ConfigError`."""
    label = " ".join(raw.split())
    if not label:
        raise ConfigError("the label is empty: give the sprite a label")
    if invisible(label):
        raise ConfigError("the label holds an invisible character: type it as it should read")
    if len(label) > MAX_LABEL_CHARS:
        raise ConfigError(f"the label is {len(label)} characters long: at most {MAX_LABEL_CHARS}")
    for part in _FORBIDDEN_IN_LABELS:
        if part in label:
            raise ConfigError(f'a label cannot hold "{part}"')
    for word in _RESERVED_WORDS:
        if word in label.casefold():
            raise ConfigError(f'Discord does not allow "{word}" in a name shown for a webhook')
    shown = sprite_name(persona_name, label)
    if len(shown) > MAX_USERNAME_CHARS:
        raise ConfigError(
            f'"{shown}" is {len(shown)} characters long: Discord shows at most'
            f" {MAX_USERNAME_CHARS}; use a shorter label"
        )
    return label


def instructions(name: str, sprites: Sequence[Sprite]) -> str:
    """What the persona's system prompt adds so its model can switch sprites (empty: none)."""
    if not sprites:
        return ""
    labels = ", ".join(sprite.label for sprite in sprites[:MAX_SPRITES])
    return (
        f"You have alternate avatars (sprites) showing {name} in different ways: {labels}."
        f' To show one, start a line with "{name} (label):", for example'
        f' "{name} ({sprites[0].label}): ..."; what follows is posted as its own message'
        f' with that avatar, until the next such line. Start a line with "{name}:" to go back'
        " to your usual avatar. Use only these labels, and only where the change means"
        " something; the marker itself is not shown."
    )


def with_sprites(prompt: str, name: str, sprites: Sequence[Sprite]) -> str:
    """A persona's system prompt, with how to switch its sprites if it has any."""
    told = instructions(name, sprites)
    return f"{prompt}\n\n{told}" if told else prompt


def wardrobe(
    name: str, sprites: Sequence[Sprite], wear: Callable[[str | None], None]
) -> Wardrobe | None:
    """The persona's sprites as its writer switches them through `wear` (None: it has none)."""
    if not sprites:
        return None
    return Wardrobe(name, tuple(sprite.label for sprite in sprites[:MAX_SPRITES]), wear)


class SpriteStore:
    """The personas' sprites in the shared database (a persona's are read with it)."""

    def __init__(self, database: Database) -> None:
        self._db = database

    async def add(self, guild_id: str, persona_key: str, sprite: Sprite) -> bool:
        """Store a sprite, or replace the one of its label; False if the persona has
        `MAX_SPRITES` other sprites already."""
        async with self._db.transaction(f"sprites:{guild_id}:{persona_key}") as tx:
            count = await tx.fetchone(
                "SELECT COUNT(*) AS n FROM persona_sprites WHERE guild_id = ? AND name_key = ?"
                " AND label_key <> ?",
                (guild_id, persona_key, sprite.key),
            )
            if count is not None and int(count["n"]) >= MAX_SPRITES:
                return False
            await tx.execute(
                "INSERT INTO persona_sprites (guild_id, name_key, label_key, label, avatar_url,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (guild_id, name_key,"
                " label_key) DO UPDATE SET label = excluded.label,"
                " avatar_url = excluded.avatar_url, updated_at = excluded.updated_at",
                (
                    guild_id,
                    persona_key,
                    sprite.key,
                    sprite.label,
                    sprite.avatar_url,
                    await tx.now(),
                ),
            )
        return True

    async def remove(self, guild_id: str, persona_key: str, label: str) -> bool:
        removed = await self._db.execute(
            "DELETE FROM persona_sprites WHERE guild_id = ? AND name_key = ? AND label_key = ?",
            (guild_id, persona_key, label_key(label)),
        )
        return removed > 0
