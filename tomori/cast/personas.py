"""Personas: characters a server's admins add, each answering under its own name and avatar.

A persona has a name (checked by `tomori.cast.names`, unique per server whatever its case), a
system prompt, an avatar, trigger words (its name alone unless given) and, if given, its own
model chain and its own prefill (what its answers begin with). A message that says one of its
trigger words as a whole word, or that replies to a message it posted, is answered by it;
`addressed` says which personas a message calls, in the order it names them, at most
`MAX_ADDRESSED`.

Kept here, in the shared database (migration 0010): the personas (`PersonaStore`, with their
sprites of migration 0012, `tomori.cast.sprites`, and their prefills of 0018), and which
persona posted which message (so a reply finds its persona after a restart and from any
process). Nothing here knows Discord:
the cog posts through the webhook, or, where it cannot, as the bot with the persona's
name before the text (`named`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tomori.cast.names import composed
from tomori.cast.sprites import Sprite, SpriteStore
from tomori.config.parsers import ConfigError
from tomori.delivery.sprite_markers import wore_sprite
from tomori.store import Database, Row

MAX_ADDRESSED = 3
"""Personas that answer one message at most, one after another."""
MAX_PERSONAS = 25
"""Per server: a list of them fits one embed, and every message is matched against them all."""
CACHE_TTL_S = 5.0
"""How long the reply rule trusts a server's personas read from the store: a change made in
another process is followed within this time (one made in this process at once)."""


@dataclass(frozen=True, slots=True)
class Persona:
    name: str
    prompt: str
    avatar_url: str | None = None
    triggers: tuple[str, ...] = ()
    """The words that call it; empty: its name."""
    models: str | None = None
    """Its model chain as `TOMORI_MODELS` writes one; None: the channel's."""
    sprites: tuple[Sprite, ...] = ()
    """Its labelled alternate avatars, by label."""
    prefill: str | None = None
    """What its answers begin with, checked by `check_prefill`; None: the channel's (see
    `tomori.turns.request.AnswerBrief.prefill_for`)."""

    @property
    def key(self) -> str:
        return name_key(self.name)

    @property
    def words(self) -> tuple[str, ...]:
        """What calls it: its trigger words, else its name."""
        return self.triggers or (self.name,)


def name_key(name: str) -> str:
    """What a persona's name is unique as, in its server: its case does not count."""
    return name.strip().casefold()


def named(name: str, text: str) -> str:
    """A persona's text as the bot's own message shows it when no webhook can post it."""
    return f"**{name}:** {text}"


def unnamed(name: str, text: str) -> str:
    """The text of a message `named` made, under the persona's name or one of its sprites'
    (`Name (label)`); any other text as it is."""
    found = re.match(rf"\*\*{re.escape(name)}(?: \([^()\n]*\))?:\*\* ", text)
    return text[found.end() :] if found else text


def _pattern(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)


def first_named_at(persona: Persona, text: str) -> int | None:
    """Where `text` first says one of the persona's words, as a whole word; None if nowhere."""
    text = composed(text)  # the same length unless it had combining marks to compose
    found = [m.start() for m in (_pattern(w).search(text) for w in persona.words) if m]
    return min(found) if found else None


def addressed(
    personas: Iterable[Persona], text: str, replied_to: str | None = None
) -> tuple[Persona, ...]:
    """The personas a message calls, in the order it names them, at most `MAX_ADDRESSED`: the
    one whose message it replies to (`replied_to`, a name's key) first, then those it names."""
    by_key = {persona.key: persona for persona in personas}
    first = by_key.get(replied_to) if replied_to is not None else None
    places = [
        (at, persona.key, persona)
        for persona in by_key.values()
        if persona is not first and (at := first_named_at(persona, text)) is not None
    ]
    named_ones = [persona for _, _, persona in sorted(places, key=lambda p: (p[0], p[1]))]
    return tuple(([first] if first is not None else []) + named_ones)[:MAX_ADDRESSED]


def shown_as(personas: Iterable[Persona], shown: str) -> Persona | None:
    """The persona that posted a message of the bot's webhook shown under `shown`: its name, or
    its name with a sprite's label (`sprite_name`); None if none is (renamed, or removed). What
    a reply finds its persona by when the store lost which posted it (a blip, or its age)."""
    return next((p for p in personas if shown == p.name or wore_sprite(p.name, shown)), None)


def drawn_in(personas: Iterable[Persona], answer: str, speaker: Persona) -> Persona | None:
    """The persona an answer of `speaker`'s names first (itself aside), which it draws in."""
    others = [p for p in personas if p.key != speaker.key]
    return next(iter(addressed(others, answer)), None)


def _persona(row: Row, sprites: Iterable[Sprite]) -> Persona:
    triggers = tuple(t for t in (row["triggers"] or "").split(",") if t)
    return Persona(
        row["name"],
        row["prompt"],
        row["avatar_url"],
        triggers,
        row["models"],
        tuple(sprites),
        row["prefill"],
    )


class PersonaStore:
    """A server's personas, and which of them posted which message, in the shared database."""

    def __init__(self, database: Database) -> None:
        self._db = database
        self._sprites = SpriteStore(database)
        self._cache: dict[str, tuple[float, tuple[Persona, ...]]] = {}

    def is_database_error(self, error: BaseException) -> bool:
        return self._db.is_database_error(error)

    def is_transient(self, error: BaseException) -> bool:
        return self._db.is_transient(error)

    async def of_server(self, guild_id: str, *, cached: bool = False) -> tuple[Persona, ...]:
        """The server's personas by name; `cached`: as read less than `CACHE_TTL_S` ago."""
        now = time.monotonic()
        hit = self._cache.get(guild_id)
        if cached and hit is not None and hit[0] > now:
            return hit[1]
        rows = await self._db.fetchall(
            "SELECT name_key, name, prompt, avatar_url, triggers, models, prefill FROM personas"
            " WHERE guild_id = ? ORDER BY name_key",
            (guild_id,),
        )
        sprites: dict[str, list[Sprite]] = {}
        for row in await self._db.fetchall(
            "SELECT name_key, label, avatar_url FROM persona_sprites WHERE guild_id = ?"
            " ORDER BY name_key, label_key",
            (guild_id,),
        ):
            sprites.setdefault(row["name_key"], []).append(Sprite(row["label"], row["avatar_url"]))
        personas = tuple(_persona(row, sprites.get(row["name_key"], ())) for row in rows)
        if len(self._cache) > 4_096:
            self._cache.clear()
        self._cache[guild_id] = (now + CACHE_TTL_S, personas)
        return personas

    async def get(self, guild_id: str, name: str) -> Persona | None:
        key = name_key(name)
        return next((p for p in await self.of_server(guild_id) if p.key == key), None)

    async def add(self, guild_id: str, persona: Persona) -> bool:
        """Store a new persona; False if the server has one of that name (or too many)."""
        async with self._db.transaction(f"personas:{guild_id}") as tx:
            count = await tx.fetchone(
                "SELECT COUNT(*) AS n FROM personas WHERE guild_id = ?", (guild_id,)
            )
            if count is not None and int(count["n"]) >= MAX_PERSONAS:
                raise ConfigError(f"this server has {MAX_PERSONAS} personas: remove one first")
            taken = await tx.fetchone(
                "SELECT 1 FROM personas WHERE guild_id = ? AND name_key = ?",
                (guild_id, persona.key),
            )
            if taken is not None:
                return False
            await tx.execute(  # sprites left by a namesake removed while one was being added
                "DELETE FROM persona_sprites WHERE guild_id = ? AND name_key = ?",
                (guild_id, persona.key),
            )
            await tx.execute(
                "INSERT INTO personas (guild_id, name_key, name, prompt, avatar_url, triggers,"
                " models, prefill, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    guild_id,
                    persona.key,
                    persona.name,
                    persona.prompt,
                    persona.avatar_url,
                    ",".join(persona.triggers),
                    persona.models,
                    persona.prefill,
                    await tx.now(),
                ),
            )
        self._cache.pop(guild_id, None)
        return True

    async def replace(self, guild_id: str, persona: Persona) -> bool:
        """Store an edited persona over the one of its name; False if there is none."""
        async with self._db.transaction() as tx:
            changed = await tx.execute(
                "UPDATE personas SET name = ?, prompt = ?, avatar_url = ?, triggers = ?,"
                " models = ?, prefill = ?, updated_at = ? WHERE guild_id = ? AND name_key = ?",
                (
                    persona.name,
                    persona.prompt,
                    persona.avatar_url,
                    ",".join(persona.triggers),
                    persona.models,
                    persona.prefill,
                    await tx.now(),
                    guild_id,
                    persona.key,
                ),
            )
        self._cache.pop(guild_id, None)
        return changed > 0

    async def remove(self, guild_id: str, name: str) -> bool:
        """Remove the persona and its sprites."""
        async with self._db.transaction() as tx:
            removed = await tx.execute(
                "DELETE FROM personas WHERE guild_id = ? AND name_key = ?",
                (guild_id, name_key(name)),
            )
            await tx.execute(
                "DELETE FROM persona_sprites WHERE guild_id = ? AND name_key = ?",
                (guild_id, name_key(name)),
            )
        self._cache.pop(guild_id, None)
        return removed > 0

    async def add_sprite(self, guild_id: str, persona: Persona, sprite: Sprite) -> bool:
        """Give the persona a sprite (or a new image for the label it has); False if it has
        as many as it may."""
        added = await self._sprites.add(guild_id, persona.key, sprite)
        self._cache.pop(guild_id, None)
        return added

    async def remove_sprite(self, guild_id: str, persona: Persona, label: str) -> bool:
        removed = await self._sprites.remove(guild_id, persona.key, label)
        self._cache.pop(guild_id, None)
        return removed

    async def posted(
        self, guild_id: str, channel_id: str, persona: Persona, message_ids: Sequence[str]
    ) -> None:
        """`persona` posted these messages (a reply to one is answered by it)."""
        if not message_ids:
            return
        async with self._db.transaction() as tx:
            now = await tx.now()
            await tx.executemany(
                "INSERT INTO persona_messages (message_id, channel_id, guild_id, name_key,"
                " posted_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING",
                [(m, channel_id, guild_id, persona.key, now) for m in message_ids],
            )

    async def posters(self, message_ids: Iterable[str]) -> dict[str, str]:
        """Of these messages, those a persona posted: the persona's name key, by message ID."""
        ids = list(dict.fromkeys(message_ids))
        found: dict[str, str] = {}
        for start in range(0, len(ids), 100):
            batch = ids[start : start + 100]
            rows = await self._db.fetchall(
                "SELECT message_id, name_key FROM persona_messages WHERE message_id IN"
                f" ({', '.join('?' for _ in batch)})",
                batch,
            )
            found.update((row["message_id"], row["name_key"]) for row in rows)
        return found


def personas_by_key(personas: Iterable[Persona]) -> Mapping[str, Persona]:
    return {persona.key: persona for persona in personas}
