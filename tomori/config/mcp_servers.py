"""`TOMORI_MCP_CONFIG`: the MCP servers a bot author gives the model, in the ecosystem's file.

The file is the one MCP clients already read, so a server's README snippet pastes in as it is:

    {"mcpServers": {
        "fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "env": {"KEY": "${KEY}"}},
        "wiki":  {"url": "https://wiki.example/mcp", "headers": {"Authorization": "Bearer ${T}"}}
    }}

A server is a command line (stdio) or a URL (Streamable HTTP). `${NAME}` in any string value
is the environment variable `NAME`, so no secret needs to sit in the file; one that is unset
refuses the file. Only the bot author configures servers: a URL an admin could type would be
a way into the bot's network. A bad file raises `ConfigError` naming the server and the field.

A server's tools run on the author's machine or accounts, for whoever asks in any server the
bot is in, so each is offered only where its entry's `"tomori"` object says (`McpAccess`):

    "git": {"command": "uvx", "args": ["mcp-server-git"],
            "tomori": {"guilds": ["123456789012345678"], "dms": false,
                       "tools": ["git_status", "git_log", "git_commit"],
                       "confirm": ["git_commit"],
                       "roles": {"123456789012345678": "234567890123456789"}}}

`guilds` lists the Discord servers (IDs; `"*"` for every one, `"console"` for the console's)
its tools are offered in, none by default; `dms`, whether in direct messages (no by default);
`tools`, which of its tools (all by default). Each call of a tool with side effects (one the
server does not mark read-only, or marks destructive, or that `confirm` names) runs only once
the member asking confirms it (`tomori.tools.confirmation`); `roles` names, by server ID, the
role they must hold there to allow one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tomori.config.parsers import ConfigError, refused

VARIABLE = "TOMORI_MCP_CONFIG"
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_KNOWN_FIELDS = frozenset(
    {"command", "args", "env", "url", "headers", "type", "disabled", "tomori"}
)
"""What a server entry may hold: its transport's fields, two other clients write (the
transport's name, and `disabled` to keep an entry while not starting it), and ours."""
_ACCESS_FIELDS = frozenset({"guilds", "dms", "tools", "confirm", "roles"})
EVERY_GUILD = "*"


@dataclass(frozen=True, slots=True)
class McpAccess:
    """Where a server's tools are offered, and which (see the module docstring)."""

    guilds: frozenset[str] = frozenset()
    dms: bool = False
    tools: frozenset[str] | None = None
    """None: every tool the server lists."""
    confirm: frozenset[str] = frozenset()
    roles: Mapping[str, str] = field(default_factory=dict)
    """By server ID, the role a member must hold there to allow a call that needs confirming."""

    def admits(self, guild_id: str | None) -> bool:
        """Whether a turn in server `guild_id` (None: a direct message) is offered its tools."""
        if guild_id is None:
            return self.dms
        return EVERY_GUILD in self.guilds or guild_id in self.guilds

    def described(self) -> str:
        """Where, in words (for `--check` and the log)."""
        if EVERY_GUILD in self.guilds:
            where = "every server"
        elif self.guilds:
            where = "servers " + ", ".join(sorted(self.guilds))
        else:
            where = "no server"
        said = f"{where}, {'and' if self.dms else 'not'} in direct messages"
        for guild, role in sorted(self.roles.items()):
            said += f"; a call is allowed only by a member holding role {role} in server {guild}"
        return said


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One server: `command` (stdio) or `url` (Streamable HTTP), never both."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    access: McpAccess = McpAccess()
    filled: frozenset[str] = frozenset()
    """Each value a `${VAR}` of the entry was filled with: a secret the author kept out of the
    file, which no log line may show (a server may echo its arguments on its stderr)."""

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


def mcp_config_file(name: str, raw: str) -> Path:
    """The variable's value: a file that exists (what is in it is read by `load_servers`)."""
    if not raw.strip() or "\0" in raw:
        raise refused(name, raw, "it must be the path of a JSON file")
    try:
        path = Path(raw.strip()).expanduser()
        found = path.is_file()
    except RuntimeError:  # ~name of a user this machine does not have
        raise refused(name, raw, "its home folder cannot be found") from None
    except OSError as error:  # a name too long, a folder we may not enter
        raise refused(name, raw, f"it cannot be checked ({error.strerror})") from None
    if not found:
        raise refused(name, raw, "no such file")
    return path


def load_servers(path: Path, environ: Mapping[str, str]) -> tuple[McpServerConfig, ...]:
    """The servers `path` declares, `${VAR}` filled from `environ`; `ConfigError` if bad."""
    where = f"{VARIABLE} ({path})"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{where}: cannot be read ({error.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"{where}: not JSON ({error})") from None
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f'{where}: it must be an object with "mcpServers": {{name: server}}')
    configs = []
    for name, entry in servers.items():
        config = _server(f"{where}: server {name!r}", name, entry, environ)
        if config is not None:
            configs.append(config)
    return tuple(configs)


def _server(
    where: str, name: str, entry: object, environ: Mapping[str, str]
) -> McpServerConfig | None:
    if not name.strip() or "\0" in name:
        raise ConfigError(f"{where}: a server needs a name")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: it must be an object with command or url")
    unknown = sorted(set(entry) - _KNOWN_FIELDS)
    if unknown:
        raise ConfigError(f"{where}: field {unknown[0]!r} is not known here")
    if entry.get("disabled") is True:
        return None
    access = _access(where, entry.get("tomori", {}))
    filled: set[str] = set()
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{where}: give either command (stdio) or url (Streamable HTTP)")
    if command is not None:
        for other in ("url", "headers"):
            if other in entry:
                raise ConfigError(f"{where}: field {other!r} is for url servers, not command")
        return McpServerConfig(
            name,
            command=_text(where, "command", command, environ, filled, required=True),
            args=tuple(_texts(where, "args", entry.get("args", []), environ, filled)),
            env=_mapping(where, "env", entry.get("env", {}), environ, filled),
            access=access,
            filled=frozenset(filled),
        )
    for other in ("args", "env"):
        if other in entry:
            raise ConfigError(f"{where}: field {other!r} is for command servers, not url")
    address = _text(where, "url", url, environ, filled, required=True)
    if not address.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: field 'url' must start with http:// or https://")
    headers = _mapping(where, "headers", entry.get("headers", {}), environ, filled)
    return McpServerConfig(
        name, url=address, headers=headers, access=access, filled=frozenset(filled)
    )


def _access(where: str, value: object) -> McpAccess:
    """The entry's `"tomori"` object: where its tools are offered, and which."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: field 'tomori' must be an object (guilds, dms, tools)")
    unknown = sorted(set(value) - _ACCESS_FIELDS)
    if unknown:
        raise ConfigError(f"{where}: field 'tomori.{unknown[0]}' is not known here")
    dms = value.get("dms", False)
    if not isinstance(dms, bool):
        raise ConfigError(f"{where}: field 'tomori.dms' must be true or false")
    tools = value.get("tools")
    return McpAccess(
        guilds=_names(where, "guilds", value.get("guilds", [])),
        dms=dms,
        tools=None if tools is None else _names(where, "tools", tools),
        confirm=_names(where, "confirm", value.get("confirm", [])),
        roles=_roles(where, value.get("roles", {})),
    )


def _roles(where: str, value: object) -> dict[str, str]:
    """`tomori.roles`: server ID to role ID, both Discord IDs (digits)."""
    problem = f"{where}: field 'tomori.roles' must map server IDs to role IDs (digits)"
    if not isinstance(value, dict):
        raise ConfigError(problem)
    roles: dict[str, str] = {}
    for guild, role in value.items():
        if not (isinstance(role, str) and guild.strip().isdigit() and role.strip().isdigit()):
            raise ConfigError(problem)
        roles[guild.strip()] = role.strip()
    return roles


def _names(where: str, name: str, value: object) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where}: field 'tomori.{name}' must be a list of names")
    return frozenset(v.strip() for v in value)


def _text(
    where: str,
    name: str,
    value: object,
    environ: Mapping[str, str],
    filled: set[str],
    *,
    required: bool = False,
) -> str:
    """The string `value`, each `${VAR}` filled from `environ` (and its value added to
    `filled`)."""
    if not isinstance(value, str) or (required and not value.strip()):
        raise ConfigError(f"{where}: field {name!r} must be a {'non-empty ' * required}string")

    def value_of(match: re.Match[str]) -> str:
        variable = match.group(1)
        if variable not in environ:
            raise ConfigError(f"{where}: field {name!r} names ${{{variable}}}, which is not set")
        filled.add(environ[variable])
        return environ[variable]

    return _REFERENCE.sub(value_of, value)


def _texts(
    where: str, name: str, value: object, environ: Mapping[str, str], filled: set[str]
) -> list[str]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: field {name!r} must be a list of strings")
    return [_text(where, f"{name}[{i}]", item, environ, filled) for i, item in enumerate(value)]


def _mapping(
    where: str, name: str, value: object, environ: Mapping[str, str], filled: set[str]
) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: field {name!r} must be an object of strings")
    return {
        key: _text(where, f"{name}.{key}", item, environ, filled) for key, item in value.items()
    }
