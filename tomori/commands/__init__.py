"""The slash commands, declared once for both Discord libraries and the console.

- `table.py`  every command: its path, description, options (kind, bounds, choices), who may
              use it, and a `/tomori` subcommand's action
- `localized.py` the commands' descriptions and choices in the other languages the bot
              speaks, as Discord registers them (names stay as declared)
"""

from tomori.commands.table import (
    COMMANDS,
    Audience,
    Given,
    Option,
    OptionKind,
    SlashCommand,
    action,
    children,
    command,
)

__all__ = [
    "COMMANDS",
    "Audience",
    "Given",
    "Option",
    "OptionKind",
    "SlashCommand",
    "action",
    "children",
    "command",
]
