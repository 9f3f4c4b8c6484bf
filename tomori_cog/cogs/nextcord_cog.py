"""The cog class for nextcord 3 bots (imported only for them).

Every command is declared in `tomori.commands.table`: each method here only names its command
and its options (whose descriptions, kinds, bounds and choices come from the table) and hands
them on. nextcord's `cog_unload` is not awaited, so closing is started there as a task the cog
keeps (`closing`); `bot.run()` gives pending tasks a moment before it stops the loop, and a bot
that manages its own loop can await `cog.closing`.
"""

import asyncio
from typing import Any

import nextcord
from nextcord.ext import commands

from tomori.commands import localized, table
from tomori.commands.table import Audience
from tomori_cog.chat import TomoriChat
from tomori_cog.cogs import admin
from tomori_cog.cogs.listeners import GatewayListeners
from tomori_cog.cogs.memory import own_memory
from tomori_cog.cogs.respond import respond as respond_command
from tomori_cog.cogs.shared import TomoriCogParts, respond_to_kill, respond_to_scene
from tomori_cog.cogs.why import why_no_answer
from tomori_cog.library import Library

Interaction = nextcord.Interaction[Any]


def build_cog(chat: TomoriChat, library: Library) -> commands.Cog:
    class Tomori(GatewayListeners, TomoriCogParts, commands.Cog):
        """LLM chat that never hangs: streamed replies, /kill, fallback models."""

        def __init__(self) -> None:
            super().__init__(chat)
            self.closing: asyncio.Task[None] | None = None

        @nextcord.slash_command(**_declared("kill"))  # type: ignore[untyped-decorator]
        async def kill(self, interaction: Interaction) -> None:
            await respond_to_kill(library, self.chat, interaction)

        @nextcord.message_command(**_on_message(table.WHY))  # type: ignore[untyped-decorator]
        async def why(self, interaction: Interaction, message: nextcord.Message) -> None:
            await why_no_answer(library, self.chat, interaction, message)

        @nextcord.slash_command(**_declared("scene"))  # type: ignore[untyped-decorator]
        async def scene(
            self,
            interaction: Interaction,
            personas: str = _option("scene", "personas"),
            cycles: int = _option("scene", "cycles"),
            instructions: str | None = _option("scene", "instructions"),
        ) -> None:
            request = (personas, cycles, instructions)
            await respond_to_scene(library, self.chat, interaction, request)

        @nextcord.slash_command(**_declared("respond"))  # type: ignore[untyped-decorator]
        async def respond(
            self,
            interaction: Interaction,
            persona: str | None = _option("respond", "persona"),
            prompt: str | None = _option("respond", "prompt"),
            prefill: str | None = _option("respond", "prefill"),
        ) -> None:
            await respond_command(library, self.chat, interaction, persona, prompt, prefill)

        @nextcord.slash_command(**_declared("memory"))  # type: ignore[untyped-decorator]
        async def memory(self, interaction: Interaction) -> None:
            """The group: Discord runs only its subcommands."""

        @memory.subcommand(**_declared("memory list"))  # type: ignore[untyped-decorator]
        async def memory_list(
            self, interaction: Interaction, page: int | None = _option("memory list", "page")
        ) -> None:
            await own_memory(library, self.chat, interaction, "list", page=page)

        @memory.subcommand(**_declared("memory forget"))  # type: ignore[untyped-decorator]
        async def memory_forget(
            self, interaction: Interaction, id: int = _option("memory forget", "id")
        ) -> None:
            await own_memory(library, self.chat, interaction, "forget", id=id)

        @memory.subcommand(**_declared("memory forget-all"))  # type: ignore[untyped-decorator]
        async def memory_forget_all(self, interaction: Interaction) -> None:
            await own_memory(library, self.chat, interaction, "forget-all")

        @memory.subcommand(**_declared("memory off"))  # type: ignore[untyped-decorator]
        async def memory_off(self, interaction: Interaction) -> None:
            await own_memory(library, self.chat, interaction, "off")

        @memory.subcommand(**_declared("memory on"))  # type: ignore[untyped-decorator]
        async def memory_on(self, interaction: Interaction) -> None:
            await own_memory(library, self.chat, interaction, "on")

        @memory.subcommand(**_declared("memory export"))  # type: ignore[untyped-decorator]
        async def memory_export(self, interaction: Interaction) -> None:
            await own_memory(library, self.chat, interaction, "export")

        @nextcord.slash_command(**_declared("tomori"))  # type: ignore[untyped-decorator]
        async def tomori(self, interaction: Interaction) -> None:
            """The group: Discord runs only its subcommands."""

        @tomori.subcommand(**_declared("tomori model"))  # type: ignore[untyped-decorator]
        async def model(
            self,
            interaction: Interaction,
            models: str = _option("tomori model", "models"),
            scope: str = _option("tomori model", "scope"),
        ) -> None:
            await self.run(interaction, "tomori model", models=models, scope=scope)

        @tomori.subcommand(**_declared("tomori prompt"))  # type: ignore[untyped-decorator]
        async def prompt(
            self,
            interaction: Interaction,
            text: str = _option("tomori prompt", "text"),
            scope: str = _option("tomori prompt", "scope"),
        ) -> None:
            await self.run(interaction, "tomori prompt", text=text, scope=scope)

        @tomori.subcommand(**_declared("tomori autoreply"))  # type: ignore[untyped-decorator]
        async def autoreply(
            self, interaction: Interaction, enabled: bool = _option("tomori autoreply", "enabled")
        ) -> None:
            await self.run(interaction, "tomori autoreply", enabled=enabled)

        @tomori.subcommand(**_declared("tomori show"))  # type: ignore[untyped-decorator]
        async def show(self, interaction: Interaction) -> None:
            await self.run(interaction, "tomori show")

        @tomori.subcommand(**_declared("tomori reset"))  # type: ignore[untyped-decorator]
        async def reset(
            self, interaction: Interaction, scope: str = _option("tomori reset", "scope")
        ) -> None:
            await self.run(interaction, "tomori reset", scope=scope)

        @tomori.subcommand(**_declared("tomori status"))  # type: ignore[untyped-decorator]
        async def status(self, interaction: Interaction) -> None:
            await self.run(interaction, "tomori status")

        @tomori.subcommand(**_declared("tomori limits"))  # type: ignore[untyped-decorator]
        async def limits(
            self,
            interaction: Interaction,
            cooldown_ms: int | None = _option("tomori limits", "cooldown_ms"),
            daily_tokens: int | None = _option("tomori limits", "daily_tokens"),
        ) -> None:
            given = {"cooldown_ms": cooldown_ms, "daily_tokens": daily_tokens}
            await self.run(interaction, "tomori limits", **given)

        @tomori.subcommand(**_declared("tomori scenes"))  # type: ignore[untyped-decorator]
        async def scenes(
            self, interaction: Interaction, enabled: bool = _option("tomori scenes", "enabled")
        ) -> None:
            await self.run(interaction, "tomori scenes", enabled=enabled)

        @tomori.subcommand(**_declared("tomori followups"))  # type: ignore[untyped-decorator]
        async def followups(
            self, interaction: Interaction, enabled: bool = _option("tomori followups", "enabled")
        ) -> None:
            await self.run(interaction, "tomori followups", enabled=enabled)

        @tomori.subcommand(**_declared("tomori swipes"))  # type: ignore[untyped-decorator]
        async def swipes(
            self, interaction: Interaction, enabled: bool = _option("tomori swipes", "enabled")
        ) -> None:
            await self.run(interaction, "tomori swipes", enabled=enabled)

        @tomori.subcommand(**_declared("tomori progress"))  # type: ignore[untyped-decorator]
        async def progress(
            self, interaction: Interaction, mode: str = _option("tomori progress", "mode")
        ) -> None:
            await self.run(interaction, "tomori progress", mode=mode)

        @tomori.subcommand(**_declared("tomori errors"))  # type: ignore[untyped-decorator]
        async def errors(
            self, interaction: Interaction, mode: str = _option("tomori errors", "mode")
        ) -> None:
            await self.run(interaction, "tomori errors", mode=mode)

        @tomori.subcommand(**_declared("tomori tools"))  # type: ignore[untyped-decorator]
        async def tools(
            self,
            interaction: Interaction,
            name: str | None = _option("tomori tools", "name"),
            offered: bool | None = _option("tomori tools", "offered"),
            scope: str = _option("tomori tools", "scope"),
        ) -> None:
            await self.run(interaction, "tomori tools", name=name, offered=offered, scope=scope)

        @tomori.subcommand(**_declared("tomori memory"))  # type: ignore[untyped-decorator]
        async def server_memory(self, interaction: Interaction) -> None:
            """The group: Discord runs only its subcommands."""

        @server_memory.subcommand(**_declared("tomori memory list"))  # type: ignore[untyped-decorator]
        async def server_memory_list(
            self,
            interaction: Interaction,
            page: int | None = _option("tomori memory list", "page"),
        ) -> None:
            await self.run(interaction, "tomori memory list", page=page)

        @server_memory.subcommand(**_declared("tomori memory forget"))  # type: ignore[untyped-decorator]
        async def server_memory_forget(
            self, interaction: Interaction, id: int = _option("tomori memory forget", "id")
        ) -> None:
            await self.run(interaction, "tomori memory forget", id=id)

        @server_memory.subcommand(**_declared("tomori memory off"))  # type: ignore[untyped-decorator]
        async def server_memory_off(self, interaction: Interaction) -> None:
            await self.run(interaction, "tomori memory off")

        @server_memory.subcommand(**_declared("tomori memory on"))  # type: ignore[untyped-decorator]
        async def server_memory_on(self, interaction: Interaction) -> None:
            await self.run(interaction, "tomori memory on")

        @tomori.subcommand(**_declared("tomori persona"))  # type: ignore[untyped-decorator]
        async def persona(self, interaction: Interaction) -> None:
            """The group: Discord runs only its subcommands."""

        @persona.subcommand(**_declared("tomori persona add"))  # type: ignore[untyped-decorator]
        async def persona_add(
            self,
            interaction: Interaction,
            name: str = _option("tomori persona add", "name"),
            prompt: str = _option("tomori persona add", "prompt"),
            avatar: str | None = _option("tomori persona add", "avatar"),
            avatar_file: nextcord.Attachment | None = _option("tomori persona add", "avatar_file"),
            triggers: str | None = _option("tomori persona add", "triggers"),
            models: str | None = _option("tomori persona add", "models"),
            prefill: str | None = _option("tomori persona add", "prefill"),
        ) -> None:
            given = {"name": name, "prompt": prompt, "avatar": avatar, "avatar_file": avatar_file}
            given |= {"triggers": triggers, "models": models, "prefill": prefill}
            await self.run(interaction, "tomori persona add", **given)

        @persona.subcommand(**_declared("tomori persona edit"))  # type: ignore[untyped-decorator]
        async def persona_edit(
            self,
            interaction: Interaction,
            name: str = _option("tomori persona edit", "name"),
            prompt: str | None = _option("tomori persona edit", "prompt"),
            avatar: str | None = _option("tomori persona edit", "avatar"),
            avatar_file: nextcord.Attachment | None = _option("tomori persona edit", "avatar_file"),
            triggers: str | None = _option("tomori persona edit", "triggers"),
            models: str | None = _option("tomori persona edit", "models"),
            prefill: str | None = _option("tomori persona edit", "prefill"),
        ) -> None:
            given = {"name": name, "prompt": prompt, "avatar": avatar, "avatar_file": avatar_file}
            given |= {"triggers": triggers, "models": models, "prefill": prefill}
            await self.run(interaction, "tomori persona edit", **given)

        @persona.subcommand(**_declared("tomori persona remove"))  # type: ignore[untyped-decorator]
        async def persona_remove(
            self, interaction: Interaction, name: str = _option("tomori persona remove", "name")
        ) -> None:
            await self.run(interaction, "tomori persona remove", name=name)

        @persona.subcommand(**_declared("tomori persona list"))  # type: ignore[untyped-decorator]
        async def persona_list(self, interaction: Interaction) -> None:
            await self.run(interaction, "tomori persona list")

        @tomori.subcommand(**_declared("tomori sprite"))  # type: ignore[untyped-decorator]
        async def sprite(self, interaction: Interaction) -> None:
            """The group: Discord runs only its subcommands."""

        @sprite.subcommand(**_declared("tomori sprite add"))  # type: ignore[untyped-decorator]
        async def sprite_add(
            self,
            interaction: Interaction,
            persona: str = _option("tomori sprite add", "persona"),
            label: str = _option("tomori sprite add", "label"),
            avatar: str | None = _option("tomori sprite add", "avatar"),
            avatar_file: nextcord.Attachment | None = _option("tomori sprite add", "avatar_file"),
        ) -> None:
            given = {"persona": persona, "label": label, "avatar": avatar}
            await self.run(interaction, "tomori sprite add", avatar_file=avatar_file, **given)

        @sprite.subcommand(**_declared("tomori sprite remove"))  # type: ignore[untyped-decorator]
        async def sprite_remove(
            self,
            interaction: Interaction,
            persona: str = _option("tomori sprite remove", "persona"),
            label: str = _option("tomori sprite remove", "label"),
        ) -> None:
            await self.run(interaction, "tomori sprite remove", persona=persona, label=label)

        @tomori.subcommand(**_declared("tomori prefill"))  # type: ignore[untyped-decorator]
        async def prefill(self, interaction: Interaction) -> None:
            """The group: Discord runs only its subcommands."""

        @prefill.subcommand(**_declared("tomori prefill set"))  # type: ignore[untyped-decorator]
        async def prefill_set(
            self,
            interaction: Interaction,
            text: str = _option("tomori prefill set", "text"),
            scope: str = _option("tomori prefill set", "scope"),
        ) -> None:
            await self.run(interaction, "tomori prefill set", text=text, scope=scope)

        @prefill.subcommand(**_declared("tomori prefill reset"))  # type: ignore[untyped-decorator]
        async def prefill_reset(
            self, interaction: Interaction, scope: str = _option("tomori prefill reset", "scope")
        ) -> None:
            await self.run(interaction, "tomori prefill reset", scope=scope)

        async def run(self, interaction: Interaction, command: str, /, **given: Any) -> None:
            await admin.run(library, self.chat, interaction, command, given)

        def cog_unload(self) -> None:
            self.unloaded()
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # unloaded outside the loop: nothing was started in it
                return
            self.closing = loop.create_task(self.chat.close())

    return Tomori()


def _declared(name: str) -> dict[str, Any]:
    """A command's or group's name, description (in every language the bot speaks) and (at
    the top) who may use it, where."""
    command = table.command(name)
    declared: dict[str, Any] = {
        "name": command.path[-1],
        "description": command.description,
        "description_localizations": localized.description(command),
    }
    if len(command.path) == 1:
        if command.audience is not Audience.EVERYONE:
            permissions = nextcord.Permissions(**{command.audience.value: True})
            declared["default_member_permissions"] = permissions
        if command.servers_only:
            declared["contexts"] = [nextcord.InteractionContextType.guild]
    return declared


def _on_message(command: table.MessageCommand) -> dict[str, Any]:
    """A message command's name and who may use it, as the table declares them."""
    declared: dict[str, Any] = {
        "name": command.name,
        "name_localizations": localized.menu_name(command),
    }
    if command.audience is not Audience.EVERYONE:
        declared["default_member_permissions"] = nextcord.Permissions(
            **{command.audience.value: True}
        )
    return declared


def _option(command: str, name: str) -> Any:
    """The option `name` of `command`, as the table declares it, its description and choices
    in every language the bot speaks."""
    declared = table.command(command)
    option = declared.option(name)
    return nextcord.SlashOption(
        name=option.name,
        description=option.description,
        description_localizations=localized.option_description(declared, option),
        choice_localizations=localized.choice_names(option) or None,
        required=option.required,
        choices=list(option.choices) or None,
        min_value=option.min_value,
        max_value=option.max_value,
        min_length=option.min_length,
        max_length=option.max_length,
        default=None if option.required else option.default,
    )
