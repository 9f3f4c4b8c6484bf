"""Every slash command, and every command on a message, is declared once, in
`tomori.commands.table`: what each Discord library registers, and what the console takes, is
held against the table here, so a cog or the console that drifts from it fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.bots import ChatBot, OpenBot, guild_only
from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer
from tomori.commands import (
    COMMANDS,
    MESSAGE_COMMANDS,
    Audience,
    MessageCommand,
    Option,
    SlashCommand,
    children,
)
from tomori.console.commands import Verb, command_in, console_subcommands, help_text

MANAGE_GUILD = 1 << 5
BOUNDS = ("min_value", "max_value", "min_length", "max_length")
TOP = [command for command in COMMANDS if len(command.path) == 1]


def declared_option(option: Option) -> dict[str, Any]:
    """An option as the table declares it, in the shape Discord's API gives it."""
    shown: dict[str, Any] = {
        "name": option.name,
        "description": option.description,
        "type": int(option.kind),
        "required": option.required,
    }
    shown |= {key: getattr(option, key) for key in BOUNDS if getattr(option, key) is not None}
    if option.choices:
        shown["choices"] = [{"name": choice, "value": choice} for choice in option.choices]
    return shown


def declared(command: SlashCommand) -> dict[str, Any]:
    """A command (and what is under it) as the table declares it."""
    under = children(command.name)
    if under:
        options = [{**declared(child), "type": 2 if children(child.name) else 1} for child in under]
    else:
        options = [declared_option(option) for option in command.options]
    shown: dict[str, Any] = {
        "name": command.path[-1],
        "description": command.description,
        "options": options,
    }
    if len(command.path) == 1:
        managers = command.audience is Audience.SERVER_MANAGERS
        shown["default_member_permissions"] = MANAGE_GUILD if managers else None
        shown["guild_only"] = command.servers_only
    return shown


def registered(payload: dict[str, Any], *, top: bool = True) -> dict[str, Any]:
    """A library's registered JSON, less what the table does not declare (localizations,
    nsfw, integration types)."""
    shown: dict[str, Any] = {"name": payload["name"], "description": payload["description"]}
    options = payload.get("options") or []
    if any(option["type"] in (1, 2) for option in options):
        shown["options"] = [{**registered(o, top=False), "type": o["type"]} for o in options]
    else:
        shown["options"] = [registered_option(option) for option in options]
    if top:
        permissions = payload.get("default_member_permissions")
        shown["default_member_permissions"] = None if permissions is None else int(permissions)
        shown["guild_only"] = guild_only(payload)
    return shown


def registered_option(option: dict[str, Any]) -> dict[str, Any]:
    shown = {key: option[key] for key in ("name", "description", "type")}
    shown["required"] = bool(option.get("required", False))
    shown |= {key: option[key] for key in BOUNDS if option.get(key) is not None}
    if option.get("choices"):
        shown["choices"] = [{"name": c["name"], "value": c["value"]} for c in option["choices"]]
    return shown


@pytest.fixture
async def bot(open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path) -> ChatBot:
    return await open_bot(settings_for(tmp_path), chain_for(llm_server))


def declared_menu(command: MessageCommand) -> dict[str, Any]:
    """A message command as the table declares it, in the shape Discord's API gives it."""
    managers = command.audience is Audience.SERVER_MANAGERS
    return {
        "name": command.name,
        "type": 3,
        "default_member_permissions": MANAGE_GUILD if managers else None,
    }


def registered_menu(payload: dict[str, Any]) -> dict[str, Any]:
    permissions = payload.get("default_member_permissions")
    return {
        "name": payload["name"],
        "type": payload["type"],
        "default_member_permissions": None if permissions is None else int(permissions),
    }


async def test_each_library_registers_exactly_the_tables_commands(bot: ChatBot) -> None:
    menus = {command.name for command in MESSAGE_COMMANDS}
    assert bot.command_names() == {command.name for command in TOP} | menus
    for command in TOP:
        assert registered(bot.payload(command.name)) == declared(command), command.name
    for menu in MESSAGE_COMMANDS:
        assert registered_menu(bot.payload(menu.name)) == declared_menu(menu), menu.name


def test_the_console_takes_every_tomori_subcommand_of_the_table_with_its_options() -> None:
    leaves = {
        command.name: tuple(option.name for option in command.options if option.in_console)
        for command in COMMANDS
        if command.path[0] == "tomori" and command.action is not None
    }
    taken = console_subcommands()
    assert {f"tomori {name}" for name in taken} | {"tomori autoreply"} == set(leaves)
    for name, options in taken.items():
        assert options == leaves[f"tomori {name}"], name


@pytest.mark.parametrize("command", TOP, ids=lambda command: command.name)
def test_the_console_runs_every_top_level_command_of_the_table(command: SlashCommand) -> None:
    typed = command_in(f"/{command.name}")
    assert typed is not None
    assert typed.kind is not Verb.UNKNOWN, f"/{command.name}"
    assert f"/{command.name}" in help_text(())
