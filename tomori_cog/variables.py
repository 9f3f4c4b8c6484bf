"""Every environment variable the `tomori` command reads, in one list: `--help` and
docs/configuration.md.

The settings' rows are read from `Settings`' own fields and the model chain's from
`tomori.config.models`; the command's own (its token, its shards, its Discord address) are
declared here, beside `Shards`, which reads the shard variables. docs/configuration.md is the
same list rendered as a page; after changing a declaration, regenerate it with
`python -m tomori_cog.variables > docs/configuration.md` (a test fails while it differs).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import urlsplit

from tomori.config.models import MODEL_VARIABLES
from tomori.config.parsers import COUNT_MAXIMUM, ConfigError, IntegerParser, refuse, refused
from tomori.config.settings import DEPRECATED_MAX_MESSAGES, VARIABLES, Settings, Variable

__all__ = [
    "BOT_VARIABLES",
    "Shards",
    "api_base_from_env",
    "configuration_page",
    "environment_help",
    "refusal",
    "shards_without_a_shared_database",
    "unread_variables",
]

SHARD_COUNT = IntegerParser(1, "shards", None)
SHARD_ID = IntegerParser(0, "a shard ID", COUNT_MAXIMUM - 1)

BOT_VARIABLES: tuple[tuple[str, str, str], ...] = (
    ("DISCORD_TOKEN", "(required)", "the bot's token"),
    (
        "DISCORD_SHARD_COUNT",
        "(none: one connection)",
        "the application's shards, across every process (the same in each); set, the command "
        f"runs the library's AutoShardedBot: {SHARD_COUNT.allowed}",
    ),
    (
        "DISCORD_SHARD_IDS",
        "(all: 0 to count-1)",
        "the shards this process runs, comma separated, each from 0 to DISCORD_SHARD_COUNT-1 "
        "(needs DISCORD_SHARD_COUNT)",
    ),
    (
        "DISCORD_API_URL",
        "(Discord's: https://discord.com/api/v10)",
        "where the bot sends its REST requests: a rate-limit proxy the operator runs in front "
        "of the bot's processes (such as nirn-proxy), as an http(s) URL ending in the API "
        "version's path",
    ),
)
"""(variable, default, what it does) of the command's own variables, which the cog does not
read."""


def api_base_from_env(environ: Mapping[str, str]) -> str | None:
    """DISCORD_API_URL without a trailing slash (None: Discord's own); raise `ConfigError`
    naming it unless it is an http(s) URL with a host."""
    raw = environ.get("DISCORD_API_URL", "").strip()
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise refused("DISCORD_API_URL", raw, "it must be an http:// or https:// URL with a host")
    return raw.rstrip("/")


class Shards(NamedTuple):
    """Which of the application's shards this process runs, so that several processes on
    several machines split one bot; no `shard_count` is one plain connection, as Discord gives
    a bot below its sharding threshold."""

    shard_count: int | None = None
    shard_ids: tuple[int, ...] | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Shards:
        """Read DISCORD_SHARD_COUNT and DISCORD_SHARD_IDS; raise `ConfigError` naming a bad one."""
        raw_count = environ.get("DISCORD_SHARD_COUNT")
        raw = environ.get("DISCORD_SHARD_IDS")
        count = None if raw_count is None else SHARD_COUNT("DISCORD_SHARD_COUNT", raw_count)
        if raw is None:
            return cls(count)
        if count is None:
            reason = "DISCORD_SHARD_COUNT must be set too (the shards of every process together)"
            raise refused("DISCORD_SHARD_IDS", raw, reason)
        allowed = f"shard IDs from 0 to {count - 1} separated by commas"
        try:
            ids = tuple(SHARD_ID("DISCORD_SHARD_IDS", p) for p in raw.split(",") if p.strip())
        except ConfigError:
            raise refuse("DISCORD_SHARD_IDS", raw, allowed) from None
        if not ids:
            raise refuse("DISCORD_SHARD_IDS", raw, allowed)
        seen: set[int] = set()
        for shard in ids:
            if shard >= count:
                reason = (
                    f"shard {shard} is not below DISCORD_SHARD_COUNT={count}: it must be {allowed}"
                )
                raise refused("DISCORD_SHARD_IDS", raw, reason)
            if shard in seen:
                raise refused("DISCORD_SHARD_IDS", raw, f"shard {shard} is listed twice")
            seen.add(shard)
        return cls(count, ids)


def known_variables() -> tuple[str, ...]:
    """Every variable the command and the cog read, in `--help`'s order, then the former names
    still read."""
    return (
        *(name for name, _, _ in BOT_VARIABLES),
        *(name for name, _, _ in MODEL_VARIABLES),
        *(variable.name for variable in VARIABLES),
        DEPRECATED_MAX_MESSAGES,
    )


OUR_PREFIX = "TOMORI_"
"""Every variable named so is ours: one we do not read is a mistake."""
CLOSE_ENOUGH = {True: 0.7, False: 0.8}
"""How alike (difflib's ratio) the rest of a name must be, after its family's prefix, to the
rest of one we read to be taken for its misspelling: `TOMORI_` ones (ours whatever they say)
are given a closest name more readily than those of our other families (`DISCORD_`,
`OPENAI_`, ...), where other software reads variables of its own (`OPENAI_ORG_ID`), not ours
to question."""


def unread_variables(environ: Mapping[str, str]) -> list[str]:
    """A sentence for each variable set that looks meant for tomori-cog but is read by nothing:
    any `TOMORI_` one we do not know, and one of another of our families (`STREAM_`,
    `DISCORD_`...) close to one we read. A misspelled variable is otherwise silently ignored,
    and the setting it meant keeps its default."""
    known = known_variables()
    found = []
    for name in sorted(environ):
        family = name.split("_", 1)[0] + "_"
        kin = {other.removeprefix(family): other for other in known if other.startswith(family)}
        if name in known or not kin:
            continue
        ours = family == OUR_PREFIX
        rest = name.removeprefix(family)
        close = difflib.get_close_matches(rest, list(kin), n=1, cutoff=CLOSE_ENOUGH[ours])
        if not close and not ours:
            continue
        meant = f": did you mean {kin[close[0]]}?" if close else " (tomori --help lists them)"
        found.append(f"{name} is set, but tomori-cog reads no such variable{meant}")
    return found


def refusal(error: Exception, environ: Mapping[str, str]) -> str:
    """What the command prints for a setting that stops it: the error, then each variable set that
    nothing reads (`TOMORI_MODEL` beside "TOMORI_MODELS is not set" says what went wrong)."""
    notes = [f"\nnote: {line}" for line in unread_variables(environ)]
    return f"error: {error}" + "".join(notes)


def shards_without_a_shared_database(environ: Mapping[str, str], settings: Settings) -> str:
    """A warning when this process runs some of the bot's shards (`DISCORD_SHARD_IDS`) on
    SQLite, or "": the processes running the other shards share its channels' locks and queues
    only through one database, and a SQLite file reaches only the processes of this machine.
    That is a documented set-up (several processes on one machine), so it is said, not refused.
    """
    if settings.db_url is not None or not environ.get("DISCORD_SHARD_IDS", "").strip():
        return ""
    return (
        f"DISCORD_SHARD_IDS runs some of the bot's shards here on SQLite ({settings.db_path}): "
        f"the processes running the others share the channels' locks only if they run on this "
        f"machine with the same TOMORI_DB_PATH; on several machines set TOMORI_DB_URL to one "
        f"PostgreSQL"
    )


def _what(variable: Variable) -> str:
    """What a setting's variable does, then what it may be."""
    return ": ".join(filter(None, [variable.help, variable.allowed]))


def environment_help() -> str:
    """`--help`'s list of variables: the command's own, then the models', then every setting with
    the `Settings` field it fills."""
    rows = [*BOT_VARIABLES, *MODEL_VARIABLES]
    rows += [
        (variable.name, variable.default, f"{_what(variable)} (Settings.{variable.field})")
        for variable in VARIABLES
    ]
    width = max(len(name) for name, _, _ in rows)
    lines = ["environment variables:"]
    for name, default, text in rows:
        lines.append(f"  {name:<{width}}  {text} [default: {default}]")
    return "\n".join(lines)


PAGE_HEAD = """\
# Configuration

<!-- Generated from the declarations in the code: edit those, then regenerate this page with
`python -m tomori_cog.variables > docs/configuration.md` (a test fails while it differs). -->

tomori-cog is configured by environment variables, read once at start-up; `tomori --help`
lists the same ones. A bad value stops start-up with one line naming the variable, the value
and what is allowed (the `tomori` command exits with code 2), never a silent fall-back to the
default. Numbers are ASCII digits: `²` or `①` are refused, as is a number past its ceiling.
An optional variable set to nothing (`TOMORI_DB_URL=` in a `.env` file) is unset; any other
variable set to nothing is refused, except the lists ({lists}), where nothing is an empty list.
A switch is `1` or `0` (or `true` or `false`, in any case).

## The tomori command

Read by the `tomori` command alone (`python -m tomori_cog`, the container's entry point); in
your own bot, its token and sharding are yours to set (nextcord's and discord.py's
`AutoShardedBot(shard_count=..., shard_ids=[...])` do what the two shard variables do here;
see [Running on several machines](operations.md#running-on-several-machines)).

"""

PAGE_MODELS = """
## The model chain

Which models answer, in order, and the keys and servers of their providers. In code,
`ModelChain.from_env({...})` reads these names from a mapping instead of the environment.
Images go only to a model marked `+vision` ([Images and files](behaviour.md#images-and-files)).

"""

PAGE_SETTINGS = """
## Settings

Each is a field of `Settings` (from `tomori_cog`), which code can build instead of the
environment. A `Settings(...)` built in code is checked by the very same rules and raises
`ConfigError` naming the field. Durations are in milliseconds. Give each field its own type, as
here (`Delivery`, `KillPolicy` and `DatabaseUrl` come from `tomori_cog`), and your own
`mypy --strict` accepts it:

```python
from pathlib import Path

from tomori_cog import DatabaseUrl, Delivery, KillPolicy, Settings, add_tomori

settings = Settings(
    history_limit=10,
    delivery=Delivery.EDIT,
    kill_policy=KillPolicy.ANYONE,
    channels=frozenset({123456789012345678}),
    db_path=Path("tomori.db"),
    db_url=DatabaseUrl.parse("postgresql://tomori:secret@db.internal/tomori"),
    temperature=0.7,
)
add_tomori(bot, settings=settings)  # await it on discord.py
```

A value read at run time from somewhere else may come in a plain form, which `Settings` takes
too and stores as the field's type: a choice's text (`"edit"`), any list, tuple or set for a
set, text for a path or an address, a whole number for a decimal. A type checker refuses those
forms in code it checks (the field says `Delivery`, not `str`): write the typed ones. `db_url`
holds a `DatabaseUrl` (`DatabaseUrl.parse(...)` reads one by `TOMORI_DB_URL`'s rule), whose
text and repr show the password as `***`; its `dsn()` alone gives the real address.
`TOMORI_DB_URL`'s TLS options are in [PostgreSQL](operations.md#postgresql); the per-user
limits, and how a server's admins override them, in [Limits](behaviour.md#limits).

"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _value(text: str) -> str:
    """A setting's default as code, as the variable is written; "(none)" as words."""
    return text if text == "(none)" else f"`{text}`"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _takes_nothing(variable: Variable) -> bool:
    """Whether a variable that is not optional may be set to nothing (a list, then empty)."""
    if variable.optional:
        return False
    try:
        variable.parse("")
    except ConfigError:
        return False
    return True


def configuration_page() -> str:
    """docs/configuration.md: every variable, its default and what it does, by who reads it."""
    plain = ["variable", "default", "what it does"]
    lists = ", ".join(f"`{v.name}`" for v in VARIABLES if _takes_nothing(v))
    return (
        PAGE_HEAD.format(lists=lists)
        + _table(plain, [[f"`{n}`", d, w] for n, d, w in BOT_VARIABLES])
        + PAGE_MODELS
        + _table(plain, [[f"`{n}`", d, w] for n, d, w in MODEL_VARIABLES])
        + PAGE_SETTINGS
        + _table(
            ["variable", "`Settings` field", "default", "what it does"],
            [[f"`{v.name}`", f"`{v.field}`", _value(v.default), _what(v)] for v in VARIABLES],
        )
    )


if __name__ == "__main__":
    print(configuration_page(), end="")
