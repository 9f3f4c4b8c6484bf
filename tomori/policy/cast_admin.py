"""`/tomori persona` and `/tomori sprite`: a server's cast, checked, stored and answered.

Actions like the rest of `tomori.policy.admin` (the cogs and the console run them through
`perform`); each refuses what its input or the server's personas do not allow, in one line.
"""

from __future__ import annotations

from dataclasses import replace

from tomori.cast.names import (
    check_avatar_url,
    check_name,
    check_triggers,
    passes_for_any,
    passes_for_the_bot,
)
from tomori.cast.personas import MAX_PERSONAS, Persona
from tomori.cast.sprites import MAX_SPRITES, Sprite, check_label
from tomori.delivery.notices import Notice, NoticeColour
from tomori.policy.admin import Action, Administered, Where, done, refused
from tomori.policy.overrides import check_prefill, check_prompt
from tomori.words import Said, said

SHOWN_PREFILL_CHARS = 80
"""How much of a persona's prefill its line in a list shows: 25 personas fit one embed."""


def add_persona(
    name: str,
    prompt: str,
    avatar: str | None = None,
    triggers: str | None = None,
    models: str | None = None,
    prefill: str | None = None,
) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        checked = check_name(name)
        if passes_for_the_bot(checked, target.bot_name):
            return refused(said("persona.passes_for_bot", name=name, bot=target.bot_name))
        if passes_for_any(checked, target.member_names(where.guild_id)):
            return refused(said("persona.passes_for_member", name=checked))
        persona = Persona(checked, check_prompt(prompt))
        persona = _persona(target, persona, avatar, triggers, models, prefill)
        if not await target.personas.add(where.guild_id, persona):
            return refused(said("persona.exists", name=persona.name))
        return _persona_done(said("persona.joined", name=persona.name), persona)

    return action


def edit_persona(
    name: str,
    prompt: str | None = None,
    avatar: str | None = None,
    triggers: str | None = None,
    models: str | None = None,
    prefill: str | None = None,
) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        if all(given is None for given in (prompt, avatar, triggers, models, prefill)):
            return refused(said("persona.edit_nothing", name=name))
        persona = await target.personas.get(where.guild_id, check_name(name))
        if persona is None:
            return refused(said("persona.none", name=name))
        if prompt is not None:
            persona = replace(persona, prompt=check_prompt(prompt))
        persona = _persona(target, persona, avatar, triggers, models, prefill)
        if not await target.personas.replace(where.guild_id, persona):
            return refused(said("persona.none", name=name))
        return _persona_done(said("persona.changed", name=persona.name), persona)

    return action


def remove_persona(name: str) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        if not await target.personas.remove(where.guild_id, name):
            return refused(said("persona.none", name=name))
        return done(said("persona.removed", name=" ".join(name.split())))

    return action


async def list_personas(target: Administered, where: Where) -> Notice:
    personas = await target.personas.of_server(where.guild_id)
    if not personas:
        return done(said("persona.no_personas"))
    lines = [_persona_line(persona) for persona in personas]
    title = said("title.personas", count=len(personas), most=MAX_PERSONAS)
    return Notice.of(title, "\n".join(lines), NoticeColour.SUCCESS)


def add_sprite(persona: str, label: str, avatar: str | None) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        found = await target.personas.get(where.guild_id, persona)
        if found is None:
            return refused(said("persona.none", name=persona))
        if avatar is None or not avatar.strip():
            return refused(said("persona.sprite_image_missing"))
        sprite = Sprite(check_label(found.name, label), check_avatar_url(avatar))
        if not await target.personas.add_sprite(where.guild_id, found, sprite):
            return refused(said("persona.sprites_full", name=found.name, most=MAX_SPRITES))
        had = any(s.key == sprite.key for s in found.sprites)
        shown = said(
            "persona.sprite_replaced" if had else "persona.sprite_added",
            name=found.name,
            label=sprite.label,
        )
        return _persona_done(
            shown, (await target.personas.get(where.guild_id, found.name)) or found
        )

    return action


def remove_sprite(persona: str, label: str) -> Action:
    async def action(target: Administered, where: Where) -> Notice:
        found = await target.personas.get(where.guild_id, persona)
        if found is None:
            return refused(said("persona.none", name=persona))
        if not await target.personas.remove_sprite(where.guild_id, found, label):
            return refused(
                said("persona.no_sprite", name=found.name, label=" ".join(label.split()))
            )
        return done(said("persona.sprite_removed", name=found.name, label=" ".join(label.split())))

    return action


def _persona(
    target: Administered,
    persona: Persona,
    avatar: str | None,
    triggers: str | None,
    models: str | None,
    prefill: str | None,
) -> Persona:
    """`persona` with the options given checked and applied (an empty one clears it)."""
    if avatar is not None:
        persona = replace(persona, avatar_url=check_avatar_url(avatar) if avatar.strip() else None)
    if triggers is not None:
        persona = replace(persona, triggers=check_triggers(triggers))
    if models is not None:
        described = target.check_models(models).described if models.strip() else None
        persona = replace(persona, models=described)
    if prefill is not None:
        persona = replace(persona, prefill=check_prefill(prefill) if prefill.strip() else None)
    return persona


def _persona_line(persona: Persona) -> str:
    words = ", ".join(persona.words)
    model = persona.models or "the channel's models"
    avatar = "" if persona.avatar_url else ", no avatar"
    sprites = ", ".join(sprite.label for sprite in persona.sprites)
    shown = f"; sprites: {sprites}" if sprites else ""
    begins = f"; begins with {_preview(persona.prefill)}" if persona.prefill else ""
    return f"**{persona.name}**: called by {words}; {model}{avatar}{shown}{begins}"


def _preview(prefill: str) -> str:
    """A prefill on one line of a list, cut to `SHOWN_PREFILL_CHARS`, in quotes."""
    line = " ".join(prefill.split())
    if len(line) > SHOWN_PREFILL_CHARS:
        line = line[:SHOWN_PREFILL_CHARS] + "…"
    return f'"{line}"'


def _persona_done(shown: Said, persona: Persona) -> Notice:
    return done(said("persona.done", said=shown, line=_persona_line(persona)))
