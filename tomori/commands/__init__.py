"""The slash commands, declared once for both Discord libraries and the console.

- `table.py`  every command: its path, description, options (kind, bounds, choices), who may
              use it, and a `/tomori` subcommand's action; and the commands on a message
              (`MESSAGE_COMMANDS`: "Why no answer?")
- `localized.py` the commands' descriptions and choices in the other languages the bot
              speaks, as Discord registers them (names stay as declared)
"""

from tomori.commands.table import (
    COMMANDS,
    MESSAGE_COMMANDS,
    WHY,
    Audience,
    Given,
    MessageCommand,
    Option,
    OptionKind,
    SlashCommand,
    action,
    children,
    command,
)

__all__ = [
    "COMMANDS",
    "MESSAGE_COMMANDS",
    "WHY",
    "Audience",
    "Given",
    "MessageCommand",
    "Option",
    "OptionKind",
    "SlashCommand",
    "action",
    "children",
    "command",
]
