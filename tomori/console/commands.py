"""The console's commands: a message that opens with `/` and a word runs one, never the model.

`/help` lists them; `/exit` and `/quit` end the session as the end of input does; `/kill` stops
the answer as the slash command does; `/scene` plays a scene of personas (`scene_request`)
as the slash command does; `/tomori` runs the admin subcommands of
`tomori.policy.admin` on the console's own channel and server, its options written as Discord
names them, the first also without its name (`/tomori model openai:gpt-4o-mini scope:server`).
Any other `/word` is told so in one line. A message that must open with `/word` is written
with `//` (one slash is dropped); `//` before anything else is left as it is (a `// comment`).
"""

from __future__ import annotations

import difflib
import re
import textwrap
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tomori.cast.scenes import scene_refused
from tomori.commands import COMMANDS, Option, OptionKind, action
from tomori.commands import command as table_command
from tomori.commands.table import MEMORY_COMMANDS
from tomori.config.settings import ConfigError
from tomori.delivery.notices import Notice
from tomori.policy import admin
from tomori.policy.admin import Action

_COMMAND = re.compile(r"/([A-Za-z][\w-]*)(?=\s|\Z)")


class Verb(StrEnum):
    HELP = "help"
    EXIT = "exit"
    KILL = "kill"
    TOMORI = "tomori"
    SCENE = "scene"
    RESPOND = "respond"
    MEMORY = "memory"
    UNKNOWN = "unknown"


_KINDS = {"help": Verb.HELP, "exit": Verb.EXIT, "quit": Verb.EXIT, "kill": Verb.KILL}
_KINDS["tomori"] = Verb.TOMORI
_KINDS["scene"] = Verb.SCENE
_KINDS["respond"] = Verb.RESPOND
_KINDS["memory"] = Verb.MEMORY


@dataclass(frozen=True, slots=True)
class Command:
    kind: Verb
    name: str
    """As typed, without its slash."""
    rest: str
    """What follows the name, as typed."""


def command_in(text: str) -> Command | None:
    """The command a message is, or None for a message to the model."""
    found = _COMMAND.match(text)
    if found is None:
        return None
    name = found.group(1)
    return Command(_KINDS.get(name.lower(), Verb.UNKNOWN), name, text[found.end() :].strip())


def as_message(text: str) -> str:
    """A message to the model as it is sent: `//word ...` loses one slash."""
    return text[1:] if text.startswith("//") and _COMMAND.match(text[1:]) else text


def unknown(command: Command) -> str:
    """One line for a command not run: not one, or one given what it takes not."""
    name = command.name
    said = (
        "is not a command: /help lists them"
        if command.kind is Verb.UNKNOWN
        else ("takes nothing after it")
    )
    return f"(/{name} {said}; a message that starts with /{name} is written //{name})"


def console_subcommands() -> dict[str, tuple[str, ...]]:
    """The `/tomori` subcommands the console runs (every one of the table's but `autoreply`:
    the console answers every message), and the options it takes of each, the first of which
    needs no name when it is required."""
    return {
        " ".join(command.path[1:]): tuple(o.name for o in command.options if o.in_console)
        for command in COMMANDS
        if command.path[0] == "tomori"
        and command.action is not None
        and command.path[1:] != ("autoreply",)
    }


def usage(name: str) -> str:
    """How the console's line for the command `name` is written, from the table."""
    command = table_command(name)
    shown = [f"/{name}"]
    for at, option in enumerate(o for o in command.options if o.in_console):
        if option.kind is OptionKind.ON_OR_OFF:
            value = "on|off"
        elif option.choices:
            value = "|".join(choice for choice in option.choices if choice != option.default)
        else:
            value = f"<{option.placeholder or option.name}>"
        if at == 0 and option.required:
            shown.append(value)
        elif option.required:
            shown.append(f"{option.name}:{value}")
        else:
            shown.append(f"[{option.name}:{value}]")
    return " ".join(shown)


def help_text(stop_words: Collection[str]) -> str:
    """The commands, and how messages are sent (naming the stop words in force)."""
    entries = [
        ("/help", "this list"),
        ("/kill", "stop the answer and clear the queue (Ctrl+C too)"),
        ("/exit, /quit", "leave, once the answers are done (Ctrl+D too)"),
        (usage("scene"), _lowered(table_command("scene").description)),
        (usage("respond"), _lowered(table_command("respond").description)),
        *((usage(command.name), _lowered(command.description)) for command in MEMORY_COMMANDS[1:]),
        *(
            (usage(f"tomori {name}"), _lowered(table_command(f"tomori {name}").description))
            for name in console_subcommands()
        ),
    ]
    lines = ["Commands:"]
    for written, said in entries:
        if len(written) < USAGE_WIDTH:
            lines.append(f"  {written:<{USAGE_WIDTH}}{said}")
        else:
            lines += [f"  {written}", f"  {'':<{USAGE_WIDTH}}{said}"]
    said = ", ".join(sorted(stop_words))
    stops = f"A stop word alone ({said}) stops" if said else "With stop words set, one alone stops"
    lines += textwrap.wrap(MESSAGES_HELP.format(stops=stops), width=88)
    return "\n".join(lines)


def _lowered(description: str) -> str:
    return description[:1].lower() + description[1:]


USAGE_WIDTH = 16
MESSAGES_HELP = (
    "Anything else is a message to the model: a line that opens a code fence (```) goes on "
    "until it closes, one that ends in \\ goes on to the next. In a terminal a paste is one "
    "message (Enter sends it), and Up and Down bring back what you sent. A message sent while "
    "an answer streams is a follow-up: the answer stops, and the next one covers both "
    "(/tomori followups off: it waits its turn). {stops} the answer and clears the queue "
    "(TOMORI_STOP_WORDS). Start a message with // to send one that starts with /."
)


def tomori_action(rest: str) -> Action | Notice:
    """The action `/tomori <rest>` runs, or the notice that says why none runs."""
    name, given = (*rest.split(maxsplit=1), "", "")[:2]
    name = name.lower()
    if name in ("persona", "sprite", "prefill"):
        which, given = (*given.split(maxsplit=1), "", "")[:2]
        name = f"{name} {which.lower()}".strip()
    if name == "autoreply":
        return admin.refused(
            "The console answers every message; /tomori autoreply applies to Discord channels."
        )
    subcommands = console_subcommands()
    if name not in subcommands:
        usages = "; ".join(usage(f"tomori {each}") for each in subcommands)
        said = f"/tomori {name} is not a subcommand. " if name else ""
        return admin.refused(f"{said}They are: {usages}.")
    try:
        return action(f"tomori {name}", _given(f"tomori {name}", given))
    except ConfigError as error:
        return admin.refused(str(error))


def memory_request(rest: str) -> tuple[str, dict[str, Any]] | Notice:
    """`/memory <rest>` as the slash command's subcommand and options, or the notice that says
    why it is not one."""
    name, given = (*rest.split(maxsplit=1), "", "")[:2]
    names = [command.path[1] for command in MEMORY_COMMANDS if len(command.path) == 2]
    if name.lower() not in names:
        usages = "; ".join(usage(f"memory {each}") for each in names)
        said = f"/memory {name} is not a subcommand. " if name else ""
        return admin.refused(f"{said}They are: {usages}.")
    try:
        return name.lower(), _given(f"memory {name.lower()}", given)
    except ConfigError as error:
        return admin.refused(str(error))


def scene_request(rest: str) -> tuple[str, int, str | None] | Notice:
    """`/scene <rest>` as the slash command's options (personas, cycles, instructions), or the
    notice that says why it is not one; the scene itself is checked as the cog checks it."""
    try:
        given = _given("scene", rest)
        return given["personas"], given["cycles"], given.get("instructions")
    except ConfigError as error:
        return scene_refused(f"{error}.")


def respond_request(rest: str) -> tuple[str | None, str | None, str | None] | Notice:
    """`/respond <rest>` as the slash command's options (persona, prompt, prefill), or the
    notice that says why it is not one."""
    try:
        given = _given("respond", rest)
    except ConfigError as error:
        return admin.refused(f"{error}.")
    return given.get("persona"), given.get("prompt"), given.get("prefill")


def _given(name: str, text: str) -> dict[str, Any]:
    """`text` read as the command's options, each as its kind takes it; an option the table
    requires and `text` lacks is refused saying what to give."""
    options = [option for option in table_command(name).options if option.in_console]
    if not options:
        if text.strip():
            raise ConfigError(f"/{name} takes no options")
        return {}
    written = _read_options(tuple(option.name for option in options), text)
    given: dict[str, Any] = {}
    for option in options:
        value = written.get(option.name, "")
        if option.name in written and not value:
            if option.min_length:  # Discord takes it no shorter either
                raise ConfigError(f"{option.name}: is given no value: {usage(name)}")
            given[option.name] = ""  # given empty: it clears what it sets
            continue
        if not value:
            if option.required:
                what = "on or off" if option.kind is OptionKind.ON_OR_OFF else option.description
                raise ConfigError(f"give {what}: {usage(name)}")
            continue
        given[option.name] = _value(option, value, name)
    return given


def _value(option: Option, value: str, name: str) -> Any:
    """A value typed for `option`, as Discord would pass it."""
    if option.kind is OptionKind.WHOLE_NUMBER:
        digits = value.strip()
        least, most = option.min_value or 0, option.max_value
        number = int(digits) if digits.isascii() and digits.isdigit() else None
        if number is None or number < least or (most is not None and number > most):
            bounds = f"from {least}" + ("" if most is None else f" to {most}")
            said = f"{option.name}={value!r} is not allowed: give a whole number {bounds}"
            raise ConfigError(f"{said}: {usage(name)}")
        return number
    if option.kind is OptionKind.ON_OR_OFF:
        word = value.strip().lower()
        if word not in ("on", "off", "true", "false", "1", "0"):
            said = f"{option.name} is on or off, not {value!r}: {usage(name)}"
            raise ConfigError(said)
        return word in ("on", "true", "1")
    return value


_WORD_COLON = re.compile(r"(?<!\S)([A-Za-z_]+):")
"""A word written as an option is (`scope:`), which may be an option misspelt."""


def _read_options(names: tuple[str, ...], given: str) -> dict[str, str]:
    for written in _WORD_COLON.findall(given):  # a misspelt option would join the value before
        if written not in names and (near := difflib.get_close_matches(written, names, 1, 0.75)):
            raise ConfigError(f"{written}: is no option here; did you mean {near[0]}:?")
    marker = re.compile(rf"(?<!\S)({'|'.join(names)}):")
    found = list(marker.finditer(given))
    options: dict[str, str] = {}
    leading = given[: found[0].start() if found else len(given)].strip()
    if leading:
        options[names[0]] = leading
    for at, option in enumerate(found):
        end = found[at + 1].start() if at + 1 < len(found) else len(given)
        if option.group(1) in options:
            raise ConfigError(f"{option.group(1)} is given twice")
        options[option.group(1)] = given[option.end() : end].strip()
    return options
