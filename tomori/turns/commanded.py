"""The turns a command asks for (`/scene`, `/respond`), checked before they are queued: written
once for the cog and the console. Whoever asked is told why not, as a notice; the member's
limits and the queue are each adapter's (a command there has its own key).

A scene must be on where it is asked (`/tomori scenes`), and its cast two or three of the
server's personas, named once each, with cycles and instructions in bounds
(`tomori.cast.scenes.cast_scene`). A `/respond` names at most one of the server's personas,
and its prefill is checked as `/tomori prefill` checks one.
"""

from __future__ import annotations

from dataclasses import dataclass

from tomori.cast.names import check_name
from tomori.cast.personas import Persona, PersonaStore
from tomori.cast.scenes import SCENES_OFF, Scene, cast_scene, scene_refused
from tomori.config.parsers import ConfigError
from tomori.delivery.notices import Notice
from tomori.policy.admin import refused
from tomori.policy.overrides import check_prefill
from tomori.turns.config import ChannelConfig
from tomori.turns.request import Addressed, Respond, TurnRequest
from tomori.words import said


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


async def respond_asked(
    personas: PersonaStore,
    guild_id: str,
    asker: str,
    persona: str | None,
    prompt: str | None,
    prefill: str | None,
) -> TurnRequest | Notice:
    """The turn `/respond` asks for in server `guild_id` (`asker`: the name the channel shows
    them by, which their prompt is said under), or the notice that says why not."""
    try:
        checked = check_prefill(prefill) if prefill is not None else None
        name = check_name(persona) if persona is not None else None
    except ConfigError as error:
        return refused(str(error))
    keys: tuple[str, ...] = ()
    if name is not None:
        found = await personas.get(guild_id, name)
        if found is None:
            return refused(said("persona.none", name=name))
        keys = (found.key,)
    # It asks directly (the asker is told of failures); it answers the channel as it stands.
    told = (prompt or "").strip() or None
    return TurnRequest(Addressed.DIRECTLY, keys, respond=Respond(asker, told, checked))
