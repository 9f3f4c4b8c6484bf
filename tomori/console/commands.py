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

import re
import textwrap
from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import StrEnum

from tomori.config.settings import COOLDOWN_MS, DAILY_TOKENS, ConfigError
from tomori.delivery.notices import Notice
from tomori.policy import admin
from tomori.policy.admin import DESCRIPTIONS, OPTION_DESCRIPTIONS, Action
from tomori.policy.scenes import SCENE_DESCRIPTION, scene_refused

_COMMAND = re.compile(r"/([A-Za-z][\w-]*)(?=\s|\Z)")


class Verb(StrEnum):
    HELP = "help"
    EXIT = "exit"
    KILL = "kill"
    TOMORI = "tomori"
    SCENE = "scene"
    UNKNOWN = "unknown"


_KINDS = {"help": Verb.HELP, "exit": Verb.EXIT, "quit": Verb.EXIT, "kill": Verb.KILL}
_KINDS["tomori"] = Verb.TOMORI
_KINDS["scene"] = Verb.SCENE


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


TOMORI_SUBCOMMANDS = {
    "model": ("models", "scope"),
    "prompt": ("text", "scope"),
    "show": (),
    "reset": ("scope",),
    "limits": ("cooldown_ms", "daily_tokens"),
    "status": (),
    "persona add": ("name", "prompt", "triggers", "models", "avatar"),
    "persona edit": ("name", "prompt", "triggers", "models", "avatar"),
    "persona remove": ("name",),
    "persona list": (),
    "sprite add": ("persona", "label", "avatar"),
    "sprite remove": ("persona", "label"),
    "scenes": ("enabled",),
    "followups": ("enabled",),
    "prefill set": ("text", "scope"),
    "prefill reset": ("scope",),
}
"""The subcommands the console runs, and their options, the first of which needs no name."""

_SUBCOMMAND_USAGE = {
    "model": "/tomori model <models> [scope:server]",
    "prompt": "/tomori prompt <text> [scope:server]",
    "show": "/tomori show",
    "reset": "/tomori reset [scope:server]",
    "limits": "/tomori limits [cooldown_ms:<ms>] [daily_tokens:<n>]",
    "status": "/tomori status",
    "persona add": "/tomori persona add <name> prompt:<text> [triggers:<words>] [models:<chain>]",
    "persona edit": "/tomori persona edit <name> [prompt:<text>] [triggers:<words>] ...",
    "persona remove": "/tomori persona remove <name>",
    "persona list": "/tomori persona list",
    "sprite add": "/tomori sprite add <persona> label:<label> avatar:<image URL>",
    "sprite remove": "/tomori sprite remove <persona> label:<label>",
    "scenes": "/tomori scenes on|off",
    "followups": "/tomori followups on|off",
    "prefill set": "/tomori prefill set <text> [scope:server]",
    "prefill reset": "/tomori prefill reset [scope:server]",
}
SCENE_USAGE = "/scene <names> cycles:<1-10> [instructions:<text>]"
SCENE_OPTIONS = ("personas", "cycles", "instructions")


def help_text(stop_words: Collection[str]) -> str:
    """The commands, and how messages are sent (naming the stop words in force)."""
    entries = [
        ("/help", "this list"),
        ("/kill", "stop the answer and clear the queue (Ctrl+C too)"),
        ("/exit, /quit", "leave, once the answers are done (Ctrl+D too)"),
        (SCENE_USAGE, _lowered(SCENE_DESCRIPTION)),
        *((_SUBCOMMAND_USAGE[n], _lowered(DESCRIPTIONS[n])) for n in TOMORI_SUBCOMMANDS),
    ]
    lines = ["Commands:"]
    for usage, said in entries:
        if len(usage) < USAGE_WIDTH:
            lines.append(f"  {usage:<{USAGE_WIDTH}}{said}")
        else:
            lines += [f"  {usage}", f"  {'':<{USAGE_WIDTH}}{said}"]
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
        name = f"{name} {which.lower()}"
    if name == "autoreply":
        return admin.refused(
            "The console answers every message; /tomori autoreply applies to Discord channels."
        )
    if name not in TOMORI_SUBCOMMANDS:
        usage = "; ".join(_SUBCOMMAND_USAGE.values())
        said = f"/tomori {name} is not a subcommand. " if name else ""
        return admin.refused(f"{said}They are: {usage}.")
    try:
        options = _options(name, given)
        return _ACTIONS[name](options)
    except ConfigError as error:
        return admin.refused(str(error))


def scene_request(rest: str) -> tuple[str, int, str | None] | Notice:
    """`/scene <rest>` as the slash command's options (personas, cycles, instructions), or the
    notice that says why it is not one; the scene itself is checked as the cog checks it."""
    try:
        options = _read_options(SCENE_OPTIONS, rest)
        cycles = options.get("cycles", "")
        if not cycles.strip().isdigit():
            raise ConfigError(f"give cycles, a number from 1 to 10: {SCENE_USAGE}")
        return options.get("personas", ""), int(cycles), options.get("instructions")
    except ConfigError as error:
        return scene_refused(f"{error}.")


def _options(subcommand: str, given: str) -> dict[str, str]:
    """`given` read as the subcommand's options: `name:value`, values running to the next
    option; text before the first named option is the first option's value."""
    names = TOMORI_SUBCOMMANDS[subcommand]
    if not names:
        if given.strip():
            raise ConfigError(f"/tomori {subcommand} takes no options")
        return {}
    return _read_options(names, given)


def _read_options(names: tuple[str, ...], given: str) -> dict[str, str]:
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


def _required(
    options: dict[str, str], name: str, subcommand: str, described: str | None = None
) -> str:
    """The option `name`, or an error saying what to give (`described`: the key of its
    description, where the option's name is shared by others, such as `text`)."""
    value = options.get(name, "")
    if not value:
        what = OPTION_DESCRIPTIONS[described or name]
        raise ConfigError(f"give {what}: {_SUBCOMMAND_USAGE[subcommand]}")
    return value


def _limits(options: dict[str, str]) -> Action:
    cooldown, tokens = options.get("cooldown_ms"), options.get("daily_tokens")
    return admin.set_limits(
        None if cooldown is None else COOLDOWN_MS("cooldown_ms", cooldown),
        None if tokens is None else DAILY_TOKENS("daily_tokens", tokens),
    )


_ACTIONS: dict[str, Callable[[dict[str, str]], Action]] = {
    "model": lambda o: admin.set_models(_required(o, "models", "model"), o.get("scope", "channel")),
    "prompt": lambda o: admin.set_prompt(_required(o, "text", "prompt"), o.get("scope", "channel")),
    "show": lambda o: admin.show,
    "reset": lambda o: admin.reset(o.get("scope", "channel")),
    "limits": _limits,
    "status": lambda o: admin.status,
    "persona add": lambda o: admin.add_persona(
        _required(o, "name", "persona add"),
        _required(o, "prompt", "persona add"),
        o.get("avatar"),
        o.get("triggers"),
        o.get("models"),
    ),
    "persona edit": lambda o: admin.edit_persona(
        _required(o, "name", "persona edit"),
        o.get("prompt"),
        o.get("avatar"),
        o.get("triggers"),
        o.get("models"),
    ),
    "persona remove": lambda o: admin.remove_persona(_required(o, "name", "persona remove")),
    "persona list": lambda o: admin.list_personas,
    "sprite add": lambda o: admin.add_sprite(
        _required(o, "persona", "sprite add"),
        _required(o, "label", "sprite add"),
        _required(o, "avatar", "sprite add"),
    ),
    "sprite remove": lambda o: admin.remove_sprite(
        _required(o, "persona", "sprite remove"), _required(o, "label", "sprite remove")
    ),
    "scenes": lambda o: admin.set_scenes(_on_or_off(o.get("enabled", ""), "scenes")),
    "followups": lambda o: admin.set_follow_ups(_on_or_off(o.get("enabled", ""), "followups")),
    "prefill set": lambda o: admin.set_prefill(
        _required(o, "text", "prefill set", "prefill_text"), o.get("scope", "channel")
    ),
    "prefill reset": lambda o: admin.reset_prefill(o.get("scope", "channel")),
}


def _on_or_off(value: str, subcommand: str) -> bool:
    """`enabled` as Discord's boolean option takes it, and as the variables write it."""
    word = value.strip().lower()
    if word not in ("on", "off", "true", "false", "1", "0"):
        usage = _SUBCOMMAND_USAGE[subcommand]
        said = f"{subcommand} are on or off, for the whole server, not {value!r}: {usage}"
        raise ConfigError(said)
    return word in ("on", "true", "1")
