"""Every slash command, declared once: its path, description, options, who may use it, its action.

The two Discord libraries' cogs declare their commands from this table (each option's
description, kind, bounds and choices come from here), the console parses `/tomori` lines
against it, and a test fails when a library registers, or the console takes, anything that
differs from it. A `/tomori` subcommand's action is built here from the options given (a
file option arrives as its URL); `/kill`, `/scene` and `/respond` act on the turns, so each
adapter runs its own. A message's context-menu command (`MessageCommand`: Apps → its name)
has no description nor options; each adapter runs it on the message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any

from tomori.cast.names import MAX_NAME_CHARS
from tomori.cast.scenes import (
    MAX_CYCLES,
    MAX_INSTRUCTIONS_CHARS,
    MIN_CYCLES,
)
from tomori.config.scope import Scope
from tomori.config.settings import ShowErrors, ShowProgress
from tomori.delivery.notices import KILL_DESCRIPTION
from tomori.delivery.sprite_markers import MAX_LABEL_CHARS
from tomori.monitoring.why import MENU_NAME
from tomori.policy import admin, cast_admin, memories, tools_admin
from tomori.policy.admin import Action
from tomori.policy.overrides import MAX_PROMPT_CHARS
from tomori.prompt.prefill import MAX_PREFILL_CHARS

Given = Mapping[str, Any]
"""The options a command was given, by name (left out: not given)."""


class OptionKind(IntEnum):
    """An option's kind, numbered as Discord's application command option types."""

    TEXT = 3
    WHOLE_NUMBER = 4
    ON_OR_OFF = 5
    FILE = 11


class Audience(StrEnum):
    """Who may use a command by default (each server can widen or narrow it)."""

    EVERYONE = "everyone"
    SERVER_MANAGERS = "manage_guild"
    """Members with Manage Server: what a command that changes how the bot answers needs."""


@dataclass(frozen=True, slots=True)
class Option:
    name: str
    description: str
    kind: OptionKind = OptionKind.TEXT
    required: bool = False
    min_length: int | None = None
    max_length: int | None = None
    min_value: int | None = None
    max_value: int | None = None
    choices: tuple[str, ...] = ()
    default: str | None = None
    """What a left-out option with choices stands for."""
    placeholder: str = ""
    """The word the console's usage line shows for the value (`<models>`)."""

    @property
    def in_console(self) -> bool:
        """The console takes no files: a file option is Discord's alone."""
        return self.kind is not OptionKind.FILE


@dataclass(frozen=True, slots=True)
class SlashCommand:
    path: tuple[str, ...]
    """Its names from the top: ("tomori", "persona", "add")."""
    description: str
    options: tuple[Option, ...] = ()
    audience: Audience = Audience.EVERYONE
    servers_only: bool = False
    action: Callable[[Given], Action] | None = None
    """A `/tomori` subcommand's action; None for a group, or a command an adapter runs."""

    @property
    def name(self) -> str:
        return " ".join(self.path)

    def option(self, name: str) -> Option:
        return next(option for option in self.options if option.name == name)


@dataclass(frozen=True, slots=True)
class MessageCommand:
    """A command on a message (Discord's message command, type 3), shown under Apps."""

    name: str
    """What the menu shows (up to 32 characters, spaces and marks allowed)."""
    audience: Audience = Audience.EVERYONE


def _text(name: str, description: str, **bounds: Any) -> Option:
    return Option(name, description, OptionKind.TEXT, **bounds)


SCOPE = Option(
    "scope",
    "channel (the default) or server",
    choices=tuple(scope.value for scope in Scope),
    default=Scope.CHANNEL.value,
)
NAME = _text(
    "name",
    "the persona's name, as the channel shows it",
    required=True,
    min_length=1,
    max_length=MAX_NAME_CHARS,
    placeholder="name",
)
PERSONA_PROMPT = "the persona's system prompt: who it is and how it speaks"
AVATAR = _text("avatar", "an image's URL, shown as the persona's avatar", placeholder="image URL")
AVATAR_FILE = Option("avatar_file", "an image, shown as the persona's avatar", OptionKind.FILE)
TRIGGERS = _text(
    "triggers", "comma-separated words that call it (its name if not given)", placeholder="words"
)
PERSONA_MODELS = _text(
    "models",
    "its own model chain, as TOMORI_MODELS (the channel's if not given)",
    placeholder="chain",
)
PERSONA_PREFILL = _text(
    "prefill",
    "what its answers begin with, such as *bows* (the channel's prefill if not given)",
    max_length=MAX_PREFILL_CHARS,
    placeholder="text",
)
PERSONA = _text(
    "persona", "the persona's name", required=True, min_length=1, max_length=MAX_NAME_CHARS
)
LABEL = _text(
    "label",
    "the sprite's label: the persona shows it with 'Name (label):'",
    required=True,
    min_length=1,
    max_length=MAX_LABEL_CHARS,
    placeholder="label",
)


def _counts(name: str, description: str) -> Option:
    return Option(name, description, OptionKind.WHOLE_NUMBER, min_value=0, placeholder="n")


def _enabled(description: str) -> Option:
    """A subcommand's one required on-or-off option."""
    return Option("enabled", description, OptionKind.ON_OR_OFF, required=True)


def _image(given: Given, url: str, file: str) -> str | None:
    """An image given as a URL, else as a file (its URL)."""
    return given.get(url) if given.get(url) is not None else given.get(file)


def _scope(given: Given) -> str:
    return str(given.get("scope") or Scope.CHANNEL.value)


def _tomori(
    path: str, description: str, *options: Option, action: Callable[[Given], Action] | None
) -> SlashCommand:
    return SlashCommand(("tomori", *path.split()), description, options, action=action)


def _server_mode(
    path: str,
    description: str,
    modes: type[StrEnum],
    modes_description: str,
    choose: Callable[[str], Action],
) -> SlashCommand:
    """A `/tomori` subcommand choosing one of a server's display `modes`: its one required
    option, `mode`, offers their values, and its action is `choose` of the one given."""
    mode = Option(
        "mode", modes_description, required=True, choices=tuple(mode.value for mode in modes)
    )
    return _tomori(path, description, mode, action=lambda given: choose(given["mode"]))


def _memory(name: str, description: str, *options: Option) -> SlashCommand:
    """A member's own `/memory` subcommand: each adapter runs it (`tomori.policy.memories.own`:
    it acts on the member, anywhere, not on a server's settings)."""
    return SlashCommand(("memory", name), description, options)


MEMORY_ID = Option(
    "id",
    "the memory's number, as the list shows it",
    OptionKind.WHOLE_NUMBER,
    required=True,
    min_value=1,
    placeholder="n",
)
MEMORY_PAGE = Option(
    "page",
    "which page of the list to show, from 1 (the first, left out)",
    OptionKind.WHOLE_NUMBER,
    min_value=1,
    placeholder="n",
)
"""A memory list's page (`tomori.policy.memories.listed`): a long list is shown a page at a
time, so each memory's number can be read, to forget it."""
MEMORY_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand(("memory",), "What Tomori remembers of you: see it, erase it, or turn it off"),
    _memory("list", "List what is remembered of you, everywhere", MEMORY_PAGE),
    _memory("forget", "Forget one of your memories", MEMORY_ID),
    _memory("forget-all", "Forget everything remembered of you"),
    _memory("off", "Remember nothing more of you, and show the model nothing remembered"),
    _memory("on", "Remember things about you again"),
    _memory("export", "Your memories as a file"),
)
"""`/memory`'s subcommands, in the table's order (their names, for the adapters)."""


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand(("kill",), KILL_DESCRIPTION),
    SlashCommand(
        ("scene",),
        "Two or three personas play a scene here, taking turns for a few cycles",
        (
            _text(
                "personas",
                "2 or 3 persona names, comma separated, in speaking order",
                required=True,
                placeholder="names",
            ),
            Option(
                "cycles",
                f"how many times each persona speaks ({MIN_CYCLES} to {MAX_CYCLES})",
                OptionKind.WHOLE_NUMBER,
                required=True,
                min_value=MIN_CYCLES,
                max_value=MAX_CYCLES,
                placeholder="1-10",
            ),
            _text(
                "instructions",
                "what the scene is about (optional)",
                min_length=1,
                max_length=MAX_INSTRUCTIONS_CHARS,
                placeholder="text",
            ),
        ),
        servers_only=True,
    ),
    SlashCommand(
        ("respond",),
        "Have Tomori, or one of its personas, answer in this channel now",
        (
            _text(
                "persona",
                "the persona that answers (Tomori itself if not given)",
                min_length=1,
                max_length=MAX_NAME_CHARS,
            ),
            _text(
                "prompt",
                "what you say to it, as a message would (the channel's last if not given)",
                min_length=1,
                max_length=MAX_PROMPT_CHARS,
            ),
            _text(
                "prefill",
                "what this answer begins with, instead of the persona's or server's prefill",
                min_length=1,
                max_length=MAX_PREFILL_CHARS,
            ),
        ),
        audience=Audience.SERVER_MANAGERS,  # a prefill puts words in the bot's mouth
        servers_only=True,
    ),
    *MEMORY_COMMANDS,
    SlashCommand(
        ("tomori",),
        "Set how Tomori answers in this server and its channels",
        audience=Audience.SERVER_MANAGERS,
        servers_only=True,
    ),
    _tomori(
        "model",
        "Set the model chain (provider:model, comma separated, primary first)",
        _text(
            "models",
            "provider:model, comma separated, primary first (as TOMORI_MODELS)",
            required=True,
            placeholder="models",
        ),
        SCOPE,
        action=lambda given: admin.set_models(given["models"], _scope(given)),
    ),
    _tomori(
        "prompt",
        "Set the system prompt",
        _text(
            "text",
            "the system prompt",
            required=True,
            min_length=1,
            max_length=MAX_PROMPT_CHARS,
            placeholder="text",
        ),
        SCOPE,
        action=lambda given: admin.set_prompt(given["text"], _scope(given)),
    ),
    _tomori(
        "autoreply",
        "Answer every message in this channel, or only when addressed",
        _enabled("true to answer every message here, false for only mentions and replies"),
        action=lambda given: admin.set_autoreply(given["enabled"]),
    ),
    _tomori(
        "show",
        "Show what applies in this channel and where each value comes from",
        action=lambda given: admin.show,
    ),
    _tomori(
        "reset",
        "Clear this channel's (or the server's) settings",
        SCOPE,
        action=lambda given: admin.reset(_scope(given)),
    ),
    _tomori(
        "status",
        "How the models behaved in this server over the last 24 hours",
        action=lambda given: admin.status,
    ),
    _tomori(
        "limits",
        "Set this server's per-user cooldown and daily token quota (0 turns one off)",
        _counts("cooldown_ms", "least milliseconds between two turns of one user; 0 for none"),
        _counts("daily_tokens", "most tokens one user may use per UTC day; 0 for no limit"),
        action=lambda given: admin.set_limits(given.get("cooldown_ms"), given.get("daily_tokens")),
    ),
    _tomori(
        "scenes",
        "Let members run /scene in this server, or turn scenes off",
        _enabled("true to let members run /scene here, false to turn scenes off"),
        action=lambda given: admin.set_scenes(given["enabled"]),
    ),
    _tomori(
        "followups",
        "Whether a new message of the user being answered stops the answer",
        _enabled("true: the next answer covers both messages; false: each is answered in turn"),
        action=lambda given: admin.set_follow_ups(given["enabled"]),
    ),
    _tomori(
        "swipes",
        "Whether the last answer carries Regenerate and ◀ ▶ to swipe between its takes",
        _enabled("true: its asker (or a moderator) may ask again and swipe; false: no buttons"),
        action=lambda given: admin.set_swipes(given["enabled"]),
    ),
    _server_mode(
        "progress",
        "Show a message's progress as reactions on it (waiting, working, a tool), or not",
        ShowProgress,
        "reactions (the default) or off",
        admin.set_progress,
    ),
    _server_mode(
        "errors",
        "How a message whose answer failed is told: an embed, a reaction, or nothing",
        ShowErrors,
        "reply (an embed, the default), react (a warning reaction) or silent",
        admin.set_errors,
    ),
    _tomori(
        "tools",
        "Show the model's tools here, or turn a tool or an MCP server off or on",
        _text(
            "name",
            "a tool's name, or an MCP server's (all its tools); leave out to list them",
            placeholder="tool",
        ),
        Option(
            "offered", "true to offer it to the model, false to turn it off", OptionKind.ON_OR_OFF
        ),
        SCOPE,
        action=lambda given: tools_admin.tools(
            given.get("name"), given.get("offered"), _scope(given)
        ),
    ),
    _tomori("memory", "What Tomori remembers in this server", action=None),
    _tomori(
        "memory list",
        "List the memories kept in this server",
        MEMORY_PAGE,
        action=lambda given: memories.server_list(int(given.get("page", 1))),
    ),
    _tomori(
        "memory forget",
        "Forget one memory kept in this server",
        MEMORY_ID,
        action=lambda given: memories.server_forget(int(given["id"])),
    ),
    _tomori(
        "memory off",
        "Remember nothing in this server, and show the model nothing remembered here",
        action=lambda given: memories.server_switch(on=False),
    ),
    _tomori(
        "memory on",
        "Remember things in this server again",
        action=lambda given: memories.server_switch(on=True),
    ),
    _tomori("persona", "Characters that answer under their own name and avatar", action=None),
    _tomori(
        "persona add",
        "Add a persona: it answers when named or replied to",
        NAME,
        _text(
            "prompt",
            PERSONA_PROMPT,
            required=True,
            min_length=1,
            max_length=MAX_PROMPT_CHARS,
            placeholder="text",
        ),
        AVATAR,
        AVATAR_FILE,
        TRIGGERS,
        PERSONA_MODELS,
        PERSONA_PREFILL,
        action=lambda given: cast_admin.add_persona(
            given["name"],
            given["prompt"],
            _image(given, "avatar", "avatar_file"),
            given.get("triggers"),
            given.get("models"),
            given.get("prefill"),
        ),
    ),
    _tomori(
        "persona edit",
        "Change a persona (only the options given)",
        NAME,
        _text(
            "prompt", PERSONA_PROMPT, min_length=1, max_length=MAX_PROMPT_CHARS, placeholder="text"
        ),
        AVATAR,
        AVATAR_FILE,
        TRIGGERS,
        PERSONA_MODELS,
        PERSONA_PREFILL,
        action=lambda given: cast_admin.edit_persona(
            given["name"],
            given.get("prompt"),
            _image(given, "avatar", "avatar_file"),
            given.get("triggers"),
            given.get("models"),
            given.get("prefill"),
        ),
    ),
    _tomori(
        "persona remove",
        "Remove a persona",
        NAME,
        action=lambda given: cast_admin.remove_persona(given["name"]),
    ),
    _tomori(
        "persona list", "List this server's personas", action=lambda given: cast_admin.list_personas
    ),
    _tomori(
        "sprite", "A persona's labelled alternate avatars, which it switches between", action=None
    ),
    _tomori(
        "sprite add",
        "Give a persona a sprite (or a new image for one of its labels)",
        PERSONA,
        LABEL,
        _text("avatar", "the sprite's image URL", placeholder="image URL"),
        Option("avatar_file", "the sprite's image", OptionKind.FILE),
        action=lambda given: cast_admin.add_sprite(
            given["persona"], given["label"], _image(given, "avatar", "avatar_file")
        ),
    ),
    _tomori(
        "sprite remove",
        "Take a sprite from a persona",
        PERSONA,
        LABEL,
        action=lambda given: cast_admin.remove_sprite(given["persona"], given["label"]),
    ),
    _tomori("prefill", "Text every answer here begins with, in character", action=None),
    _tomori(
        "prefill set",
        "Set the text answers begin with (a /respond prefill replaces it)",
        _text(
            "text",
            "what answers begin with (up to 2,000 characters), such as Tomori: *smiles*",
            required=True,
            min_length=1,
            max_length=MAX_PREFILL_CHARS,
            placeholder="text",
        ),
        SCOPE,
        action=lambda given: admin.set_prefill(given["text"], _scope(given)),
    ),
    _tomori(
        "prefill reset",
        "Clear this channel's (or the server's) prefill",
        SCOPE,
        action=lambda given: admin.reset_prefill(_scope(given)),
    ),
)

WHY = MessageCommand(MENU_NAME)
"""What became of a message: its sender's (or a moderator's) "Why no answer?"."""
MESSAGE_COMMANDS: tuple[MessageCommand, ...] = (WHY,)

BY_NAME: Mapping[str, SlashCommand] = {command.name: command for command in COMMANDS}


def command(name: str) -> SlashCommand:
    """The command declared as `name` ("tomori persona add")."""
    return BY_NAME[name]


def children(name: str) -> tuple[SlashCommand, ...]:
    """The subcommands and groups directly under `name`, in the table's order."""
    depth = len(name.split()) + 1
    prefix = f"{name} "
    return tuple(c for c in COMMANDS if c.name.startswith(prefix) and len(c.path) == depth)


def action(name: str, given: Given) -> Action:
    """The action of the `/tomori` subcommand `name` given these options."""
    built = command(name).action
    if built is None:
        raise KeyError(f"/{name} has no action of its own")
    return built(given)
