"""The cog class for discord.py 2 bots (imported only for them)."""

from typing import Any, Literal

import discord
from discord import app_commands
from discord.ext import commands

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
from tomori_cog.cogs.respond import respond as respond_command
from tomori_cog.cogs.shared import TomoriCogParts, respond_to_kill, respond_to_scene
from tomori_cog.library import Library
from tomori_cog.reading import gateway
from tomori_cog.service import TomoriService

Scope = Literal["channel", "server"]
Count = app_commands.Range[int, 0, None]
Prompt = app_commands.Range[str, 1, MAX_PROMPT_CHARS]
Name = app_commands.Range[str, 1, MAX_NAME_CHARS]
Label = app_commands.Range[str, 1, MAX_LABEL_CHARS]
Cycles = app_commands.Range[int, MIN_CYCLES, MAX_CYCLES]
Instructions = app_commands.Range[str, 1, MAX_INSTRUCTIONS_CHARS]
PrefillText = app_commands.Range[str, 1, MAX_PREFILL_CHARS]
"""Discord refuses a longer prompt before it reaches the bot; `admin` checks it again."""


def build_cog(service: TomoriService, library: Library) -> commands.Cog:
    class Tomori(TomoriCogParts, commands.Cog):
        """LLM chat that never hangs: streamed replies, /kill, fallback models."""

        async def cog_load(self) -> None:
            await self.service.ensure_started()

        async def cog_unload(self) -> None:
            await self.service.close()

        @commands.Cog.listener()
        async def on_message(self, message: discord.Message) -> None:
            await self.service.handle_message(message)

        @commands.Cog.listener()
        async def on_ready(self) -> None:
            gateway.fresh_from_discord(
                self.service.memory, self.service.bot.guilds, "new gateway session"
            )

        # -- what keeps recent messages and queued triggers honest (tomori_cog/reading/gateway.py)

        @commands.Cog.listener()
        async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
            gateway.message_edited(self.service.memory, library, payload)
            self.service.messages_changed((payload.message_id,))

        @commands.Cog.listener()
        async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
            gateway.message_deleted(self.service.memory, payload)
            self.service.messages_deleted((payload.message_id,))

        @commands.Cog.listener()
        async def on_raw_bulk_message_delete(
            self, payload: discord.RawBulkMessageDeleteEvent
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

        @app_commands.command(name="kill", description=KILL_DESCRIPTION)
        async def kill(self, interaction: discord.Interaction) -> None:
            await respond_to_kill(library, self.service, interaction)

        @app_commands.command(name="scene", description=SCENE_DESCRIPTION)
        @app_commands.guild_only()
        @app_commands.describe(**SCENE_OPTIONS)
        async def scene(
            self,
            interaction: discord.Interaction,
            personas: str,
            cycles: Cycles,
            instructions: Instructions | None = None,
        ) -> None:
            request = (personas, cycles, instructions)
            await respond_to_scene(library, self.service, interaction, request)

        tomori = app_commands.Group(
            name="tomori",
            description=admin.GROUP_DESCRIPTION,
            guild_only=True,
            default_permissions=discord.Permissions(**{admin.PERMISSION: True}),
        )

        @tomori.command(name="model", description=DESCRIPTIONS["model"])
        @app_commands.describe(models=OPTION_DESCRIPTIONS["models"])
        @app_commands.describe(scope=OPTION_DESCRIPTIONS["scope"])
        async def model(
            self, interaction: discord.Interaction, models: str, scope: Scope = "channel"
        ) -> None:
            await admin.run(library, self.service, interaction, actions.set_models(models, scope))

        @tomori.command(name="prompt", description=DESCRIPTIONS["prompt"])
        @app_commands.describe(text=OPTION_DESCRIPTIONS["text"])
        @app_commands.describe(scope=OPTION_DESCRIPTIONS["scope"])
        async def prompt(
            self, interaction: discord.Interaction, text: Prompt, scope: Scope = "channel"
        ) -> None:
            await admin.run(library, self.service, interaction, actions.set_prompt(text, scope))

        @tomori.command(name="autoreply", description=DESCRIPTIONS["autoreply"])
        @app_commands.describe(enabled=OPTION_DESCRIPTIONS["enabled"])
        async def autoreply(self, interaction: discord.Interaction, enabled: bool) -> None:
            await admin.run(library, self.service, interaction, actions.set_autoreply(enabled))

        @tomori.command(name="show", description=DESCRIPTIONS["show"])
        async def show(self, interaction: discord.Interaction) -> None:
            await admin.run(library, self.service, interaction, actions.show)

        @tomori.command(name="reset", description=DESCRIPTIONS["reset"])
        @app_commands.describe(scope=OPTION_DESCRIPTIONS["scope"])
        async def reset(self, interaction: discord.Interaction, scope: Scope = "channel") -> None:
            await admin.run(library, self.service, interaction, actions.reset(scope))

        @tomori.command(name="status", description=DESCRIPTIONS["status"])
        async def status(self, interaction: discord.Interaction) -> None:
            await admin.run(library, self.service, interaction, actions.status)

        @tomori.command(name="limits", description=DESCRIPTIONS["limits"])
        @app_commands.describe(cooldown_ms=OPTION_DESCRIPTIONS["cooldown_ms"])
        @app_commands.describe(daily_tokens=OPTION_DESCRIPTIONS["daily_tokens"])
        async def limits(
            self,
            interaction: discord.Interaction,
            cooldown_ms: Count | None = None,
            daily_tokens: Count | None = None,
        ) -> None:
            action = actions.set_limits(cooldown_ms, daily_tokens)
            await admin.run(library, self.service, interaction, action)

        @tomori.command(name="scenes", description=DESCRIPTIONS["scenes"])
        @app_commands.describe(enabled=OPTION_DESCRIPTIONS["scenes_enabled"])
        async def scenes(self, interaction: discord.Interaction, enabled: bool) -> None:
            await admin.run(library, self.service, interaction, actions.set_scenes(enabled))

        @tomori.command(name="followups", description=DESCRIPTIONS["followups"])
        @app_commands.describe(enabled=OPTION_DESCRIPTIONS["follow_ups"])
        async def followups(self, interaction: discord.Interaction, enabled: bool) -> None:
            await admin.run(library, self.service, interaction, actions.set_follow_ups(enabled))

        persona = app_commands.Group(
            name="persona", description=DESCRIPTIONS["persona"], parent=tomori
        )

        @persona.command(name="add", description=DESCRIPTIONS["persona add"])
        @app_commands.describe(**PERSONA_OPTIONS)
        async def persona_add(
            self,
            interaction: discord.Interaction,
            name: Name,
            prompt: Prompt,
            avatar: str | None = None,
            avatar_file: discord.Attachment | None = None,
            triggers: str | None = None,
            models: str | None = None,
        ) -> None:
            image = avatar if avatar is not None else getattr(avatar_file, "url", None)
            action = actions.add_persona(name, prompt, image, triggers, models)
            await admin.run(library, self.service, interaction, action)

        @persona.command(name="edit", description=DESCRIPTIONS["persona edit"])
        @app_commands.describe(**PERSONA_OPTIONS)
        async def persona_edit(
            self,
            interaction: discord.Interaction,
            name: Name,
            prompt: Prompt | None = None,
            avatar: str | None = None,
            avatar_file: discord.Attachment | None = None,
            triggers: str | None = None,
            models: str | None = None,
        ) -> None:
            image = avatar if avatar is not None else getattr(avatar_file, "url", None)
            action = actions.edit_persona(name, prompt, image, triggers, models)
            await admin.run(library, self.service, interaction, action)

        @persona.command(name="remove", description=DESCRIPTIONS["persona remove"])
        @app_commands.describe(name=OPTION_DESCRIPTIONS["name"])
        async def persona_remove(self, interaction: discord.Interaction, name: Name) -> None:
            await admin.run(library, self.service, interaction, actions.remove_persona(name))

        @persona.command(name="list", description=DESCRIPTIONS["persona list"])
        async def persona_list(self, interaction: discord.Interaction) -> None:
            await admin.run(library, self.service, interaction, actions.list_personas)

        sprite = app_commands.Group(
            name="sprite", description=DESCRIPTIONS["sprite"], parent=tomori
        )

        @sprite.command(name="add", description=DESCRIPTIONS["sprite add"])
        @app_commands.describe(**SPRITE_OPTIONS)
        async def sprite_add(
            self,
            interaction: discord.Interaction,
            persona: Name,
            label: Label,
            avatar: str | None = None,
            avatar_file: discord.Attachment | None = None,
        ) -> None:
            image = avatar if avatar is not None else getattr(avatar_file, "url", None)
            action = actions.add_sprite(persona, label, image)
            await admin.run(library, self.service, interaction, action)

        @sprite.command(name="remove", description=DESCRIPTIONS["sprite remove"])
        @app_commands.describe(persona=SPRITE_OPTIONS["persona"], label=SPRITE_OPTIONS["label"])
        async def sprite_remove(
            self, interaction: discord.Interaction, persona: Name, label: Label
        ) -> None:
            await admin.run(
                library, self.service, interaction, actions.remove_sprite(persona, label)
            )

        prefill = app_commands.Group(
            name="prefill", description=DESCRIPTIONS["prefill"], parent=tomori
        )

        @prefill.command(name="set", description=DESCRIPTIONS["prefill set"])
        @app_commands.describe(text=OPTION_DESCRIPTIONS["prefill_text"])
        @app_commands.describe(scope=OPTION_DESCRIPTIONS["scope"])
        async def prefill_set(
            self, interaction: discord.Interaction, text: PrefillText, scope: Scope = "channel"
        ) -> None:
            action = actions.set_prefill(text, scope)
            await admin.run(library, self.service, interaction, action)

        @prefill.command(name="reset", description=DESCRIPTIONS["prefill reset"])
        @app_commands.describe(scope=OPTION_DESCRIPTIONS["scope"])
        async def prefill_reset(
            self, interaction: discord.Interaction, scope: Scope = "channel"
        ) -> None:
            await admin.run(library, self.service, interaction, actions.reset_prefill(scope))

        @app_commands.command(name="respond", description=DESCRIPTIONS["respond"])
        @app_commands.guild_only()
        @app_commands.default_permissions(**{admin.PERMISSION: True})
        @app_commands.describe(
            persona=OPTION_DESCRIPTIONS["respond_persona"],
            prompt=OPTION_DESCRIPTIONS["respond_prompt"],
            prefill=OPTION_DESCRIPTIONS["respond_prefill"],
        )
        async def respond(
            self,
            interaction: discord.Interaction,
            persona: Name | None = None,
            prompt: Prompt | None = None,
            prefill: PrefillText | None = None,
        ) -> None:
            await respond_command(library, self.service, interaction, persona, prompt, prefill)

        @tomori.command(name="tools", description=DESCRIPTIONS["tools"])
        @app_commands.describe(name=OPTION_DESCRIPTIONS["tool_name"])
        @app_commands.describe(offered=OPTION_DESCRIPTIONS["offered"])
        @app_commands.describe(scope=OPTION_DESCRIPTIONS["scope"])
        async def tools(
            self,
            interaction: discord.Interaction,
            name: str | None = None,
            offered: bool | None = None,
            scope: Scope = "channel",
        ) -> None:
            action = actions.tools(name, offered, scope)
            await admin.run(library, self.service, interaction, action)

    return Tomori(service)


PERSONA_OPTIONS = {
    "name": OPTION_DESCRIPTIONS["name"],
    "prompt": OPTION_DESCRIPTIONS["prompt"],
    "avatar": OPTION_DESCRIPTIONS["avatar"],
    "avatar_file": OPTION_DESCRIPTIONS["avatar_file"],
    "triggers": OPTION_DESCRIPTIONS["triggers"],
    "models": OPTION_DESCRIPTIONS["persona_models"],
}
SPRITE_OPTIONS = {
    "persona": OPTION_DESCRIPTIONS["persona"],
    "label": OPTION_DESCRIPTIONS["label"],
    "avatar": OPTION_DESCRIPTIONS["sprite_avatar"],
    "avatar_file": OPTION_DESCRIPTIONS["sprite_avatar_file"],
}
