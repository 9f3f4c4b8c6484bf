"""The cog class for nextcord 3 bots (imported only for them).

nextcord's `cog_unload` is not awaited, so closing is started there as a task the cog keeps
(`closing`); `bot.run()` gives pending tasks a moment before it stops the loop, and a bot
that manages its own loop can await `cog.closing`.
"""

import asyncio
from typing import Any

import nextcord
from nextcord.ext import commands

from tomori.delivery.notices import KILL_DESCRIPTION
from tomori.delivery.sprite_markers import MAX_LABEL_CHARS
from tomori.policy import admin as actions
from tomori.policy.admin import DESCRIPTIONS, OPTION_DESCRIPTIONS
from tomori.policy.overrides import MAX_PROMPT_CHARS
from tomori.policy.personas import MAX_NAME_CHARS
from tomori.policy.scenes import (
    MAX_CYCLES,
    MAX_INSTRUCTIONS_CHARS,
    MIN_CYCLES,
    SCENE_DESCRIPTION,
)
from tomori.policy.scenes import OPTION_DESCRIPTIONS as SCENE_OPTIONS
from tomori.prompt.prefill import MAX_PREFILL_CHARS
from tomori_cog.cogs import admin
from tomori_cog.cogs.admin import SCOPES
from tomori_cog.cogs.respond import respond as respond_command
from tomori_cog.cogs.shared import TomoriCogParts, respond_to_kill, respond_to_scene
from tomori_cog.library import Library
from tomori_cog.reading import gateway
from tomori_cog.service import TomoriService


def build_cog(service: TomoriService, library: Library) -> commands.Cog:
    class Tomori(TomoriCogParts, commands.Cog):
        """LLM chat that never hangs: streamed replies, /kill, fallback models."""

        def __init__(self) -> None:
            super().__init__(service)
            self.closing: asyncio.Task[None] | None = None

        @commands.Cog.listener()
        async def on_ready(self) -> None:
            gateway.fresh_from_discord(
                self.service.memory, self.service.bot.guilds, "new gateway session"
            )
            await self.service.ensure_started()

        @commands.Cog.listener()
        async def on_message(self, message: nextcord.Message) -> None:
            await self.service.handle_message(message)

        # -- what keeps recent messages and queued triggers honest (tomori_cog/reading/gateway.py)

        @commands.Cog.listener()
        async def on_raw_message_edit(self, payload: nextcord.RawMessageUpdateEvent) -> None:
            gateway.message_edited(self.service.memory, library, payload)
            self.service.messages_changed((payload.message_id,))

        @commands.Cog.listener()
        async def on_raw_message_delete(self, payload: nextcord.RawMessageDeleteEvent) -> None:
            gateway.message_deleted(self.service.memory, payload)
            self.service.messages_deleted((payload.message_id,))

        @commands.Cog.listener()
        async def on_raw_bulk_message_delete(
            self, payload: nextcord.RawBulkMessageDeleteEvent
        ) -> None:
            gateway.messages_deleted(self.service.memory, payload)
            self.service.messages_deleted(payload.message_ids)

        @commands.Cog.listener()
        async def on_disconnect(self) -> None:
            gateway.unsure(self.service.memory, "gateway disconnected")

        @commands.Cog.listener()
        async def on_resumed(self) -> None:
            gateway.unsure(self.service.memory, "gateway resumed")

        @commands.Cog.listener()
        async def on_shard_ready(self, shard_id: int) -> None:
            gateway.fresh_from_discord(
                self.service.memory,
                [g for g in self.service.bot.guilds if g.shard_id == shard_id],
                f"shard {shard_id} ready",
            )

        @commands.Cog.listener()
        async def on_guild_channel_update(self, before: Any, after: Any) -> None:
            gateway.channel_changed(self.service.memory, before, after)

        @commands.Cog.listener()
        async def on_guild_role_update(self, before: Any, after: Any) -> None:
            gateway.unsure(self.service.memory, f"role {after.id} changed")

        @commands.Cog.listener()
        async def on_member_update(self, before: Any, after: Any) -> None:
            gateway.member_changed(self.service.memory, after)

        @commands.Cog.listener()
        async def on_guild_join(self, guild: Any) -> None:
            gateway.fresh_from_discord(self.service.memory, [guild], f"joined server {guild.id}")

        @commands.Cog.listener()
        async def on_guild_available(self, guild: Any) -> None:
            gateway.fresh_from_discord(self.service.memory, [guild], f"server {guild.id} available")

        @commands.Cog.listener()
        async def on_thread_join(self, thread: Any) -> None:
            gateway.thread_joined(self.service.memory, thread)

        @nextcord.slash_command(name="kill", description=KILL_DESCRIPTION)  # type: ignore[untyped-decorator]
        async def kill(self, interaction: nextcord.Interaction) -> None:  # type: ignore[type-arg]
            await respond_to_kill(library, self.service, interaction)

        @nextcord.slash_command(  # type: ignore[untyped-decorator]
            name="scene",
            description=SCENE_DESCRIPTION,
            contexts=[nextcord.InteractionContextType.guild],
        )
        async def scene(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            personas: str = nextcord.SlashOption(description=SCENE_OPTIONS["personas"]),
            cycles: int = nextcord.SlashOption(
                description=SCENE_OPTIONS["cycles"], min_value=MIN_CYCLES, max_value=MAX_CYCLES
            ),
            instructions: str | None = nextcord.SlashOption(
                description=SCENE_OPTIONS["instructions"],
                required=False,
                max_length=MAX_INSTRUCTIONS_CHARS,
            ),
        ) -> None:
            request = (personas, cycles, instructions)
            await respond_to_scene(library, self.service, interaction, request)

        @nextcord.slash_command(  # type: ignore[untyped-decorator]
            name="tomori",
            description=admin.GROUP_DESCRIPTION,
            default_member_permissions=nextcord.Permissions(**{admin.PERMISSION: True}),
            contexts=[nextcord.InteractionContextType.guild],
        )
        async def tomori(self, interaction: nextcord.Interaction) -> None:  # type: ignore[type-arg]
            """The group: Discord runs only its subcommands."""

        @tomori.subcommand(name="model", description=DESCRIPTIONS["model"])  # type: ignore[untyped-decorator]
        async def model(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            models: str = _text("models"),
            scope: str = _scope(),
        ) -> None:
            await admin.run(library, self.service, interaction, actions.set_models(models, scope))

        @tomori.subcommand(name="prompt", description=DESCRIPTIONS["prompt"])  # type: ignore[untyped-decorator]
        async def prompt(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            text: str = _text("text", max_length=MAX_PROMPT_CHARS),
            scope: str = _scope(),
        ) -> None:
            await admin.run(library, self.service, interaction, actions.set_prompt(text, scope))

        @tomori.subcommand(name="autoreply", description=DESCRIPTIONS["autoreply"])  # type: ignore[untyped-decorator]
        async def autoreply(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            enabled: bool = nextcord.SlashOption(description=OPTION_DESCRIPTIONS["enabled"]),
        ) -> None:
            await admin.run(library, self.service, interaction, actions.set_autoreply(enabled))

        @tomori.subcommand(name="show", description=DESCRIPTIONS["show"])  # type: ignore[untyped-decorator]
        async def show(self, interaction: nextcord.Interaction) -> None:  # type: ignore[type-arg]
            await admin.run(library, self.service, interaction, actions.show)

        @tomori.subcommand(name="reset", description=DESCRIPTIONS["reset"])  # type: ignore[untyped-decorator]
        async def reset(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            scope: str = _scope(),
        ) -> None:
            await admin.run(library, self.service, interaction, actions.reset(scope))

        @tomori.subcommand(name="status", description=DESCRIPTIONS["status"])  # type: ignore[untyped-decorator]
        async def status(self, interaction: nextcord.Interaction) -> None:  # type: ignore[type-arg]
            await admin.run(library, self.service, interaction, actions.status)

        @tomori.subcommand(name="limits", description=DESCRIPTIONS["limits"])  # type: ignore[untyped-decorator]
        async def limits(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            cooldown_ms: int | None = _count("cooldown_ms"),
            daily_tokens: int | None = _count("daily_tokens"),
        ) -> None:
            action = actions.set_limits(cooldown_ms, daily_tokens)
            await admin.run(library, self.service, interaction, action)

        @tomori.subcommand(name="scenes", description=DESCRIPTIONS["scenes"])  # type: ignore[untyped-decorator]
        async def scenes(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            enabled: bool = nextcord.SlashOption(description=OPTION_DESCRIPTIONS["scenes_enabled"]),
        ) -> None:
            await admin.run(library, self.service, interaction, actions.set_scenes(enabled))

        @tomori.subcommand(name="followups", description=DESCRIPTIONS["followups"])  # type: ignore[untyped-decorator]
        async def followups(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            enabled: bool = nextcord.SlashOption(description=OPTION_DESCRIPTIONS["follow_ups"]),
        ) -> None:
            await admin.run(library, self.service, interaction, actions.set_follow_ups(enabled))

        @tomori.subcommand(name="persona", description=DESCRIPTIONS["persona"])  # type: ignore[untyped-decorator]
        async def persona(self, interaction: nextcord.Interaction) -> None:  # type: ignore[type-arg]
            """The group: Discord runs only its subcommands."""

        @persona.subcommand(name="add", description=DESCRIPTIONS["persona add"])  # type: ignore[untyped-decorator]
        async def persona_add(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            name: str = _text("name", max_length=MAX_NAME_CHARS),
            prompt: str = _text("prompt", max_length=MAX_PROMPT_CHARS),
            avatar: str | None = _optional("avatar"),
            avatar_file: nextcord.Attachment | None = _optional("avatar_file"),  # noqa: B008
            triggers: str | None = _optional("triggers"),
            models: str | None = _optional("persona_models", "models"),
        ) -> None:
            image = avatar if avatar is not None else getattr(avatar_file, "url", None)
            action = actions.add_persona(name, prompt, image, triggers, models)
            await admin.run(library, self.service, interaction, action)

        @persona.subcommand(name="edit", description=DESCRIPTIONS["persona edit"])  # type: ignore[untyped-decorator]
        async def persona_edit(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            name: str = _text("name", max_length=MAX_NAME_CHARS),
            prompt: str | None = _optional("prompt"),
            avatar: str | None = _optional("avatar"),
            avatar_file: nextcord.Attachment | None = _optional("avatar_file"),  # noqa: B008
            triggers: str | None = _optional("triggers"),
            models: str | None = _optional("persona_models", "models"),
        ) -> None:
            image = avatar if avatar is not None else getattr(avatar_file, "url", None)
            action = actions.edit_persona(name, prompt, image, triggers, models)
            await admin.run(library, self.service, interaction, action)

        @persona.subcommand(name="remove", description=DESCRIPTIONS["persona remove"])  # type: ignore[untyped-decorator]
        async def persona_remove(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            name: str = _text("name", max_length=MAX_NAME_CHARS),
        ) -> None:
            await admin.run(library, self.service, interaction, actions.remove_persona(name))

        @persona.subcommand(name="list", description=DESCRIPTIONS["persona list"])  # type: ignore[untyped-decorator]
        async def persona_list(self, interaction: nextcord.Interaction) -> None:  # type: ignore[type-arg]
            await admin.run(library, self.service, interaction, actions.list_personas)

        @tomori.subcommand(name="sprite", description=DESCRIPTIONS["sprite"])  # type: ignore[untyped-decorator]
        async def sprite(self, interaction: nextcord.Interaction) -> None:  # type: ignore[type-arg]
            """The group: Discord runs only its subcommands."""

        @sprite.subcommand(name="add", description=DESCRIPTIONS["sprite add"])  # type: ignore[untyped-decorator]
        async def sprite_add(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            persona: str = _text("persona", max_length=MAX_NAME_CHARS),
            label: str = _text("label", max_length=MAX_LABEL_CHARS),
            avatar: str | None = _optional("sprite_avatar", "avatar"),
            avatar_file: nextcord.Attachment | None = _optional(  # noqa: B008
                "sprite_avatar_file", "avatar_file"
            ),
        ) -> None:
            image = avatar if avatar is not None else getattr(avatar_file, "url", None)
            action = actions.add_sprite(persona, label, image)
            await admin.run(library, self.service, interaction, action)

        @sprite.subcommand(name="remove", description=DESCRIPTIONS["sprite remove"])  # type: ignore[untyped-decorator]
        async def sprite_remove(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            persona: str = _text("persona", max_length=MAX_NAME_CHARS),
            label: str = _text("label", max_length=MAX_LABEL_CHARS),
        ) -> None:
            action = actions.remove_sprite(persona, label)
            await admin.run(library, self.service, interaction, action)

        @tomori.subcommand(name="prefill", description=DESCRIPTIONS["prefill"])  # type: ignore[untyped-decorator]
        async def prefill(self, interaction: nextcord.Interaction) -> None:  # type: ignore[type-arg]
            """The group: Discord runs only its subcommands."""

        @prefill.subcommand(name="set", description=DESCRIPTIONS["prefill set"])  # type: ignore[untyped-decorator]
        async def prefill_set(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            text: str = _text("prefill_text", max_length=MAX_PREFILL_CHARS, name="text"),
            scope: str = _scope(),
        ) -> None:
            action = actions.set_prefill(text, scope)
            await admin.run(library, self.service, interaction, action)

        @prefill.subcommand(name="reset", description=DESCRIPTIONS["prefill reset"])  # type: ignore[untyped-decorator]
        async def prefill_reset(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            scope: str = _scope(),
        ) -> None:
            await admin.run(library, self.service, interaction, actions.reset_prefill(scope))

        @nextcord.slash_command(  # type: ignore[untyped-decorator]
            name="respond",
            description=DESCRIPTIONS["respond"],
            default_member_permissions=nextcord.Permissions(**{admin.PERMISSION: True}),
            contexts=[nextcord.InteractionContextType.guild],
        )
        async def respond(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            persona: str | None = _optional("respond_persona", "persona", MAX_NAME_CHARS),
            prompt: str | None = _optional("respond_prompt", "prompt", MAX_PROMPT_CHARS),
            prefill: str | None = _optional("respond_prefill", "prefill", MAX_PREFILL_CHARS),
        ) -> None:
            await respond_command(library, self.service, interaction, persona, prompt, prefill)

        @tomori.subcommand(name="tools", description=DESCRIPTIONS["tools"])  # type: ignore[untyped-decorator]
        async def tools(
            self,
            interaction: nextcord.Interaction,  # type: ignore[type-arg]
            name: str | None = nextcord.SlashOption(
                description=OPTION_DESCRIPTIONS["tool_name"], required=False, default=None
            ),
            offered: bool | None = nextcord.SlashOption(
                description=OPTION_DESCRIPTIONS["offered"], required=False, default=None
            ),
            scope: str = _scope(),
        ) -> None:
            action = actions.tools(name, offered, scope)
            await admin.run(library, self.service, interaction, action)

        def cog_unload(self) -> None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # unloaded outside the loop: nothing was started in it
                return
            self.closing = loop.create_task(self.service.close())

    return Tomori()


def _text(described: str, name: str | None = None, max_length: int | None = None) -> Any:
    return nextcord.SlashOption(
        name=name or described, description=OPTION_DESCRIPTIONS[described], max_length=max_length
    )


def _optional(described: str, name: str | None = None, max_length: int | None = None) -> Any:
    return nextcord.SlashOption(
        name=name or described,
        description=OPTION_DESCRIPTIONS[described],
        required=False,
        max_length=max_length,
    )


def _scope() -> Any:
    return nextcord.SlashOption(
        description=OPTION_DESCRIPTIONS["scope"],
        choices=list(SCOPES),
        required=False,
        default=SCOPES[0],
    )


def _count(name: str) -> Any:
    """An optional whole number; its bounds are checked by `tomori.policy.overrides` (see admin)."""
    return nextcord.SlashOption(
        name=name, description=OPTION_DESCRIPTIONS[name], required=False, min_value=0
    )
