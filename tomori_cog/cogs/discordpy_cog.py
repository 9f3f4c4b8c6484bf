"""The cog class for discord.py 2 bots (imported only for them).

Every command is declared in `tomori.commands.table`: each method here only names its command
and its options and hands them on. Names, descriptions and who may use a command come from
the table; discord.py reads an option's kind and bounds from its annotation, so the types below
spell the table's bounds (a test holds what discord.py registers against the table).
"""

from collections.abc import Callable
from typing import Any, Literal, TypeVar

import discord
from discord import app_commands
from discord.ext import commands

from tomori.cast.names import MAX_NAME_CHARS
from tomori.cast.scenes import MAX_CYCLES, MAX_INSTRUCTIONS_CHARS, MIN_CYCLES
from tomori.commands import localized, table
from tomori.commands.table import Audience
from tomori.delivery.sprite_markers import MAX_LABEL_CHARS
from tomori.policy.overrides import MAX_PROMPT_CHARS
from tomori.prompt.prefill import MAX_PREFILL_CHARS
from tomori_cog.chat import TomoriChat
from tomori_cog.cogs import admin, discordpy_translator
from tomori_cog.cogs.discordpy_translator import worded
from tomori_cog.cogs.listeners import GatewayListeners
from tomori_cog.cogs.memory import own_memory
from tomori_cog.cogs.respond import respond as respond_command
from tomori_cog.cogs.shared import TomoriCogParts, respond_to_kill, respond_to_scene
from tomori_cog.cogs.why import why_no_answer
from tomori_cog.library import Library

Scope = Literal["channel", "server"]
ProgressMode = Literal["reactions", "off"]
ErrorsMode = Literal["reply", "react", "silent"]
Count = app_commands.Range[int, 0, None]
Prompt = app_commands.Range[str, 1, MAX_PROMPT_CHARS]
Name = app_commands.Range[str, 1, MAX_NAME_CHARS]
Label = app_commands.Range[str, 1, MAX_LABEL_CHARS]
Cycles = app_commands.Range[int, MIN_CYCLES, MAX_CYCLES]
MemoryId = app_commands.Range[int, 1, None]
Page = app_commands.Range[int, 1, None]
Instructions = app_commands.Range[str, 1, MAX_INSTRUCTIONS_CHARS]
PrefillText = app_commands.Range[str, 1, MAX_PREFILL_CHARS]
"""Discord refuses a longer text before it reaches the bot; the action checks it again."""
PersonaPrefill = app_commands.Range[str, None, MAX_PREFILL_CHARS]
"""As `PrefillText`, but an edit may give it empty (clearing it)."""
Interaction = discord.Interaction[Any]
F = TypeVar("F", bound=Callable[..., Any])


def build_cog(chat: TomoriChat, library: Library) -> commands.Cog:
    class Tomori(GatewayListeners, TomoriCogParts, commands.Cog):
        """LLM chat that never hangs: streamed replies, /kill, fallback models."""

        async def cog_load(self) -> None:
            await discordpy_translator.install(self.chat.bot.tree)
            # discord.py takes no context menu declared in a class: the cog adds its own to
            # the tree, and takes it away as it is unloaded
            self.chat.bot.tree.add_command(_on_message(table.WHY, self.why))
            await self.chat.ensure_started()

        async def cog_unload(self) -> None:
            self.unloaded()
            await discordpy_translator.uninstall(self.chat.bot.tree)
            self.chat.bot.tree.remove_command(table.WHY.name, type=discord.AppCommandType.message)
            await self.chat.close()

        async def why(self, interaction: Interaction, message: discord.Message) -> None:
            await why_no_answer(library, self.chat, interaction, message)

        @app_commands.command(**_declared("kill"))
        async def kill(self, interaction: Interaction) -> None:
            await respond_to_kill(library, self.chat, interaction)

        @app_commands.command(**_declared("scene"))
        @_as_declared("scene")
        async def scene(
            self,
            interaction: Interaction,
            personas: str,
            cycles: Cycles,
            instructions: Instructions | None = None,
        ) -> None:
            request = (personas, cycles, instructions)
            await respond_to_scene(library, self.chat, interaction, request)

        @app_commands.command(**_declared("respond"))
        @_as_declared("respond")
        async def respond(
            self,
            interaction: Interaction,
            persona: Name | None = None,
            prompt: Prompt | None = None,
            prefill: PrefillText | None = None,
        ) -> None:
            await respond_command(library, self.chat, interaction, persona, prompt, prefill)

        memory = app_commands.Group(**_group("memory"))

        @memory.command(**_declared("memory list"))
        @_as_declared("memory list")
        async def memory_list(self, interaction: Interaction, page: Page | None = None) -> None:
            await own_memory(library, self.chat, interaction, "list", page=page)

        @memory.command(**_declared("memory forget"))
        @_as_declared("memory forget")
        async def memory_forget(self, interaction: Interaction, id: MemoryId) -> None:
            await own_memory(library, self.chat, interaction, "forget", id=id)

        @memory.command(**_declared("memory forget-all"))
        async def memory_forget_all(self, interaction: Interaction) -> None:
            await own_memory(library, self.chat, interaction, "forget-all")

        @memory.command(**_declared("memory off"))
        async def memory_off(self, interaction: Interaction) -> None:
            await own_memory(library, self.chat, interaction, "off")

        @memory.command(**_declared("memory on"))
        async def memory_on(self, interaction: Interaction) -> None:
            await own_memory(library, self.chat, interaction, "on")

        @memory.command(**_declared("memory export"))
        async def memory_export(self, interaction: Interaction) -> None:
            await own_memory(library, self.chat, interaction, "export")

        tomori = app_commands.Group(**_group("tomori"))

        @tomori.command(**_declared("tomori model"))
        @_as_declared("tomori model")
        async def model(
            self, interaction: Interaction, models: str, scope: Scope = "channel"
        ) -> None:
            await self.run(interaction, "tomori model", models=models, scope=scope)

        @tomori.command(**_declared("tomori prompt"))
        @_as_declared("tomori prompt")
        async def prompt(
            self, interaction: Interaction, text: Prompt, scope: Scope = "channel"
        ) -> None:
            await self.run(interaction, "tomori prompt", text=text, scope=scope)

        @tomori.command(**_declared("tomori autoreply"))
        @_as_declared("tomori autoreply")
        async def autoreply(self, interaction: Interaction, enabled: bool) -> None:
            await self.run(interaction, "tomori autoreply", enabled=enabled)

        @tomori.command(**_declared("tomori show"))
        async def show(self, interaction: Interaction) -> None:
            await self.run(interaction, "tomori show")

        @tomori.command(**_declared("tomori reset"))
        @_as_declared("tomori reset")
        async def reset(self, interaction: Interaction, scope: Scope = "channel") -> None:
            await self.run(interaction, "tomori reset", scope=scope)

        @tomori.command(**_declared("tomori status"))
        async def status(self, interaction: Interaction) -> None:
            await self.run(interaction, "tomori status")

        @tomori.command(**_declared("tomori limits"))
        @_as_declared("tomori limits")
        async def limits(
            self,
            interaction: Interaction,
            cooldown_ms: Count | None = None,
            daily_tokens: Count | None = None,
        ) -> None:
            given = {"cooldown_ms": cooldown_ms, "daily_tokens": daily_tokens}
            await self.run(interaction, "tomori limits", **given)

        @tomori.command(**_declared("tomori scenes"))
        @_as_declared("tomori scenes")
        async def scenes(self, interaction: Interaction, enabled: bool) -> None:
            await self.run(interaction, "tomori scenes", enabled=enabled)

        @tomori.command(**_declared("tomori followups"))
        @_as_declared("tomori followups")
        async def followups(self, interaction: Interaction, enabled: bool) -> None:
            await self.run(interaction, "tomori followups", enabled=enabled)

        @tomori.command(**_declared("tomori swipes"))
        @_as_declared("tomori swipes")
        async def swipes(self, interaction: Interaction, enabled: bool) -> None:
            await self.run(interaction, "tomori swipes", enabled=enabled)

        @tomori.command(**_declared("tomori progress"))
        @_as_declared("tomori progress")
        async def progress(self, interaction: Interaction, mode: ProgressMode) -> None:
            await self.run(interaction, "tomori progress", mode=mode)

        @tomori.command(**_declared("tomori errors"))
        @_as_declared("tomori errors")
        async def errors(self, interaction: Interaction, mode: ErrorsMode) -> None:
            await self.run(interaction, "tomori errors", mode=mode)

        @tomori.command(**_declared("tomori tools"))
        @_as_declared("tomori tools")
        async def tools(
            self,
            interaction: Interaction,
            name: str | None = None,
            offered: bool | None = None,
            scope: Scope = "channel",
        ) -> None:
            await self.run(interaction, "tomori tools", name=name, offered=offered, scope=scope)

        server_memory = app_commands.Group(**_group("tomori memory"), parent=tomori)

        @server_memory.command(**_declared("tomori memory list"))
        @_as_declared("tomori memory list")
        async def server_memory_list(
            self, interaction: Interaction, page: Page | None = None
        ) -> None:
            await self.run(interaction, "tomori memory list", page=page)

        @server_memory.command(**_declared("tomori memory forget"))
        @_as_declared("tomori memory forget")
        async def server_memory_forget(self, interaction: Interaction, id: MemoryId) -> None:
            await self.run(interaction, "tomori memory forget", id=id)

        @server_memory.command(**_declared("tomori memory off"))
        async def server_memory_off(self, interaction: Interaction) -> None:
            await self.run(interaction, "tomori memory off")

        @server_memory.command(**_declared("tomori memory on"))
        async def server_memory_on(self, interaction: Interaction) -> None:
            await self.run(interaction, "tomori memory on")

        persona = app_commands.Group(**_group("tomori persona"), parent=tomori)

        @persona.command(**_declared("tomori persona add"))
        @_as_declared("tomori persona add")
        async def persona_add(
            self,
            interaction: Interaction,
            name: Name,
            prompt: Prompt,
            avatar: str | None = None,
            avatar_file: discord.Attachment | None = None,
            triggers: str | None = None,
            models: str | None = None,
            prefill: PersonaPrefill | None = None,
        ) -> None:
            given = {"name": name, "prompt": prompt, "avatar": avatar, "avatar_file": avatar_file}
            given |= {"triggers": triggers, "models": models, "prefill": prefill}
            await self.run(interaction, "tomori persona add", **given)

        @persona.command(**_declared("tomori persona edit"))
        @_as_declared("tomori persona edit")
        async def persona_edit(
            self,
            interaction: Interaction,
            name: Name,
            prompt: Prompt | None = None,
            avatar: str | None = None,
            avatar_file: discord.Attachment | None = None,
            triggers: str | None = None,
            models: str | None = None,
            prefill: PersonaPrefill | None = None,
        ) -> None:
            given = {"name": name, "prompt": prompt, "avatar": avatar, "avatar_file": avatar_file}
            given |= {"triggers": triggers, "models": models, "prefill": prefill}
            await self.run(interaction, "tomori persona edit", **given)

        @persona.command(**_declared("tomori persona remove"))
        @_as_declared("tomori persona remove")
        async def persona_remove(self, interaction: Interaction, name: Name) -> None:
            await self.run(interaction, "tomori persona remove", name=name)

        @persona.command(**_declared("tomori persona list"))
        async def persona_list(self, interaction: Interaction) -> None:
            await self.run(interaction, "tomori persona list")

        sprite = app_commands.Group(**_group("tomori sprite"), parent=tomori)

        @sprite.command(**_declared("tomori sprite add"))
        @_as_declared("tomori sprite add")
        async def sprite_add(
            self,
            interaction: Interaction,
            persona: Name,
            label: Label,
            avatar: str | None = None,
            avatar_file: discord.Attachment | None = None,
        ) -> None:
            given = {"persona": persona, "label": label, "avatar": avatar}
            await self.run(interaction, "tomori sprite add", avatar_file=avatar_file, **given)

        @sprite.command(**_declared("tomori sprite remove"))
        @_as_declared("tomori sprite remove")
        async def sprite_remove(
            self, interaction: Interaction, persona: Name, label: Label
        ) -> None:
            await self.run(interaction, "tomori sprite remove", persona=persona, label=label)

        prefill = app_commands.Group(**_group("tomori prefill"), parent=tomori)

        @prefill.command(**_declared("tomori prefill set"))
        @_as_declared("tomori prefill set")
        async def prefill_set(
            self, interaction: Interaction, text: PrefillText, scope: Scope = "channel"
        ) -> None:
            await self.run(interaction, "tomori prefill set", text=text, scope=scope)

        @prefill.command(**_declared("tomori prefill reset"))
        @_as_declared("tomori prefill reset")
        async def prefill_reset(self, interaction: Interaction, scope: Scope = "channel") -> None:
            await self.run(interaction, "tomori prefill reset", scope=scope)

        async def run(self, interaction: Interaction, command: str, /, **given: Any) -> None:
            await admin.run(library, self.chat, interaction, command, given)

    return Tomori(chat)


def _declared(name: str) -> dict[str, Any]:
    """A command's name and description, as the table declares them (said in every language
    the bot speaks: `tomori_cog.cogs.discordpy_translator`)."""
    command = table.command(name)
    description = worded(command.description, localized.command_key(command))
    return {"name": command.path[-1], "description": description}


def _on_message(
    command: table.MessageCommand, callback: Callable[..., Any]
) -> app_commands.ContextMenu:
    """A message command, as the table declares it, running `callback`."""
    name = worded(command.name, localized.menu_key(command))
    menu = app_commands.ContextMenu(name=name, callback=callback)
    if command.audience is not Audience.EVERYONE:
        menu.default_permissions = discord.Permissions(**{command.audience.value: True})
    return menu


def _group(name: str) -> dict[str, Any]:
    """A group's name and description, and (at the top) who may use it, where."""
    command = table.command(name)
    declared = _declared(name)
    if len(command.path) == 1:
        declared["guild_only"] = command.servers_only
        if command.audience is not Audience.EVERYONE:
            permissions = discord.Permissions(**{command.audience.value: True})
            declared["default_permissions"] = permissions
    return declared


def _as_declared(name: str) -> Callable[[F], F]:
    """Its options' descriptions and choices (said in every language the bot speaks), and (at
    the top) who may use it, where."""
    command = table.command(name)

    def declare(callback: F) -> F:
        described = {
            option.name: worded(option.description, localized.option_key(command, option))
            for option in command.options
        }
        callback = app_commands.describe(**described)(callback)
        choices = {option.name: _choices(option) for option in command.options if option.choices}
        if choices:
            callback = app_commands.choices(**choices)(callback)
        if len(command.path) == 1 and command.servers_only:
            callback = app_commands.guild_only()(callback)
        if len(command.path) == 1 and command.audience is not Audience.EVERYONE:
            callback = app_commands.default_permissions(**{command.audience.value: True})(callback)
        return callback

    return declare


def _choices(option: table.Option) -> list[app_commands.Choice[str]]:
    """An option's choices, each named as its value (said in every language the bot speaks)."""
    return [
        app_commands.Choice(name=worded(value, localized.choice_key(option, value)), value=value)
        for value in option.choices
    ]
