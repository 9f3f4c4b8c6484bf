"""A `/scene` asked for, checked before it is queued: written once for the cog and the console.

Scenes must be on where it is asked (`/tomori scenes`), and its cast must be two or three of
the server's personas, named once each, with cycles and instructions in bounds
(`tomori.cast.scenes.cast_scene`). Whoever asked is told why not, as a notice; the member's
limits and the queue are each adapter's (a command there has its own key).
"""

from __future__ import annotations

from dataclasses import dataclass

from tomori.cast.personas import Persona, PersonaStore
from tomori.cast.scenes import SCENES_OFF, Scene, cast_scene, scene_refused
from tomori.config.parsers import ConfigError
from tomori.delivery.notices import Notice
from tomori.turns.config import ChannelConfig


@dataclass(frozen=True, slots=True)
class AskedScene:
    scene: Scene
    names: dict[str, str]
    """By name key, each persona's name as shown (for the notice that it begins)."""


async def scene_asked(
    config: ChannelConfig,
    personas: PersonaStore,
    where: tuple[str, str],
    names: str,
    cycles: int,
    instructions: str | None,
) -> AskedScene | Notice:
    """The scene asked for in `where` (server, channel), or the notice that says why not."""
    guild_id, channel_id = where
    if not (await config.resolved(guild_id, channel_id, cached=False)).scenes.value:
        return scene_refused(SCENES_OFF)
    everyone: tuple[Persona, ...] = await personas.of_server(guild_id)
    try:
        scene = cast_scene(names, cycles, instructions, everyone)
    except ConfigError as error:
        return scene_refused(f"{error}.")
    return AskedScene(scene, {persona.key: persona.name for persona in everyone})
