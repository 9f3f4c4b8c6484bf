"""The slash commands in the other languages the bot speaks, as Discord registers them.

A command's English is its table's (`tomori.commands.table`); each other language's catalog
(`tomori.words`) holds its words by their place: `command.<path>` a command's description,
`option.<path>.<option>` an option's, `choice.<option>.<value>` a choice's name, `menu.<name>`
a message command's name (the one name said in the reader's language: nobody types it). Names stay
as declared in every language, so the `/kill` a notice names is the one a reader types. A
test fails when a language lacks any of them (tests/words/test_catalog.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from tomori.commands.table import COMMANDS, MESSAGE_COMMANDS, MessageCommand, Option, SlashCommand
from tomori.words import localizations


def command_key(command: SlashCommand) -> str:
    return f"command.{command.name}"


def option_key(command: SlashCommand, option: Option) -> str:
    return f"option.{command.name}.{option.name}"


def menu_key(command: MessageCommand) -> str:
    return f"menu.{command.name}"


def menu_name(command: MessageCommand) -> dict[str, str]:
    """A message command's name in the Apps menu by Discord locale, English left out: unlike a
    slash command's, nobody types it, so it is said in the reader's language."""
    return localizations(menu_key(command))


def choice_key(option: Option, value: str) -> str:
    return f"choice.{option.name}.{value}"


def description(command: SlashCommand) -> dict[str, str]:
    """The command's description by Discord locale, English left out."""
    return localizations(command_key(command))


def option_description(command: SlashCommand, option: Option) -> dict[str, str]:
    """The option's description by Discord locale, English left out."""
    return localizations(option_key(command, option))


def choice_names(option: Option) -> dict[str, dict[str, str]]:
    """Each choice's name by Discord locale (English left out), by its value."""
    return {value: localizations(choice_key(option, value)) for value in option.choices}


def english() -> Iterator[tuple[str, str]]:
    """Every text of the table another language says, by its key: its English."""
    for command in COMMANDS:
        yield command_key(command), command.description
        for option in command.options:
            yield option_key(command, option), option.description
            for value in option.choices:
                yield choice_key(option, value), value
    for menu in MESSAGE_COMMANDS:
        yield menu_key(menu), menu.name
