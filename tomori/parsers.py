"""How the text of an environment variable becomes a setting's value, or a `ConfigError`.

Each parser takes the variable's name and its raw text and returns a value within the bounds
it declares, or raises `ConfigError` with one line naming the variable, the value and what is
allowed: the only two outcomes, whatever the text (digit-like characters such as `²`, numbers
of any length, NUL bytes). `tomori.config` declares which parser each variable uses. The way
back (`as_text`: a value written as its variable's text) lets a `Settings(...)` built in code be
checked by the very same parsers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit


class ConfigError(ValueError):
    """A setting has a value the bot cannot run with; the message says which and why.

    `reason` is the part after the name and value ("it must be ..."), so the same refusal can
    be worded for an environment variable or for a `Settings` field.
    """

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


def refused(name: str, raw: str, reason: str) -> ConfigError:
    return ConfigError(f"{name}={raw!r} is not allowed: {reason}", reason)


def refuse(name: str, raw: str, allowed: str) -> ConfigError:
    return refused(name, raw, f"it must be {allowed}")


SECOND_MS = 1_000
HOUR_MS = 3_600 * SECOND_MS
DAY_MS = 24 * HOUR_MS
WEEK_MS = 7 * DAY_MS
COUNT_MAXIMUM = 10_000
"""The ceiling of a count whose variable names none: far past any use, far below overflow."""


class IntegerParser:
    """Reads a whole number of `unit` between `minimum` and `maximum`, ASCII digits only.

    `str.isdigit` also accepts `²` and `①`, which `int` refuses, and `int` reads any length:
    both are refused here, so the only outcomes are an in-bounds value or a `ConfigError`.
    A duration's ceiling defaults to a day; a count's to `COUNT_MAXIMUM`.
    """

    def __init__(self, minimum: int, unit: str, maximum: int | None) -> None:
        self.minimum = minimum
        self.maximum = maximum or (DAY_MS if unit == "milliseconds" else COUNT_MAXIMUM)
        kind = {0: "a non-negative integer", 1: "a positive integer"}.get(
            minimum, f"an integer from {minimum}"
        )
        disables = ", 0 disables" if minimum == 0 else ""
        self.allowed = f"{kind} up to {self.maximum} ({unit}{disables})"

    def __call__(self, name: str, raw: str) -> int:
        text = raw.strip()
        if (
            not text.isascii()
            or not text.isdigit()
            or len(text.lstrip("0")) > len(str(self.maximum))
            or not self.minimum <= int(text) <= self.maximum
        ):
            raise refuse(name, raw, self.allowed)
        return int(text)


def integer(
    minimum: int, unit: str = "milliseconds", *, maximum: int | None = None
) -> IntegerParser:
    return IntegerParser(minimum, unit, maximum)


def choice(kind: type[StrEnum]) -> Callable[[str, str], StrEnum]:
    def parse(name: str, raw: str) -> StrEnum:
        try:
            return kind(raw.strip().lower())
        except ValueError:
            raise refuse(
                name, raw, "one of " + ", ".join(member.value for member in kind)
            ) from None

    return parse


def flag(name: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text not in ("0", "1", "true", "false"):
        raise refuse(name, raw, "1 or 0 (or true/false)")
    return text in ("1", "true")


SNOWFLAKE = IntegerParser(1, "a Discord ID", 2**64 - 1)
"""A channel ID: Discord's IDs are unsigned 64-bit numbers."""


def channel_ids(name: str, raw: str) -> frozenset[int]:
    pieces = [piece.strip() for piece in raw.split(",") if piece.strip()]
    try:
        return frozenset(SNOWFLAKE(name, piece) for piece in pieces)
    except ConfigError:
        raise refuse(
            name, raw, f"channel IDs (numbers from 1 to {SNOWFLAKE.maximum}) separated by commas"
        ) from None


def text(name: str, raw: str) -> str:
    if not raw.strip():
        raise refuse(name, raw, "some text (unset it to use the default)")
    return raw


def db_path(name: str, raw: str) -> Path:
    """Accept a file path whose folder exists; refuse what SQLite could never open."""
    if not raw.strip() or "\0" in raw:
        raise refuse(name, raw, "a file path")
    try:
        path = Path(raw).expanduser()
    except RuntimeError:  # ~name of a user this machine does not have
        raise refused(name, raw, "its home folder cannot be found") from None
    try:
        if path.is_dir():
            raise refused(name, raw, "it is a folder, not a file")
        if not path.parent.is_dir():
            raise refused(name, raw, f"its folder {str(path.parent)!r} does not exist")
    except OSError as error:  # a name too long, a folder we may not enter
        raise refused(name, raw, f"it cannot be checked ({error.strerror})") from None
    return path


POSTGRES_SCHEMES = ("postgresql", "postgres")
DATABASE_URL_SHAPE = (
    "postgresql://user:password@host:port/dbname (port optional; "
    "@ : / ? # in the user or password %-encoded)"
)


class DatabaseUrl:
    """A PostgreSQL address whose password shows nowhere but in `dsn()`.

    The settings are printed, logged and put in error messages; a password held as a plain
    string would go with them. `str` and `repr` show `postgresql://user:***@host:port/dbname`,
    and only the driver's connect call asks for `dsn()`. Not a dataclass, so that
    `dataclasses.asdict(settings)` keeps it whole (and masked) instead of spelling out its parts.
    """

    __slots__ = ("_password", "database", "host", "port", "user")

    def __init__(
        self,
        *,
        host: str,
        database: str,
        port: int | None = None,
        user: str = "",
        password: str = "",
    ) -> None:
        self.host = host
        self.database = database
        self.port = port
        self.user = user
        self._password = password

    def dsn(self) -> str:
        """The address with the real password, for the database driver and nothing else."""
        return self._written(quote(self._password, safe=""))

    def _written(self, password: str) -> str:
        user = quote(self.user, safe="")
        userinfo = f"{user}:{password}@" if password else f"{user}@" if user else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port is None else f":{self.port}"
        return f"postgresql://{userinfo}{host}{port}/{quote(self.database, safe='')}"

    def __str__(self) -> str:
        return self._written("***" if self._password else "")

    def __repr__(self) -> str:
        return f"DatabaseUrl({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatabaseUrl) and self.dsn() == other.dsn()

    def __hash__(self) -> int:
        return hash(self.dsn())


HOST_AND_PORT = re.compile(r"(\[[0-9a-f:.]*\]|[^:\[\]]*)(:[0-9]+)?", re.ASCII | re.IGNORECASE)
"""A host part that holds nothing but a host (a name, an address, an IPv6 one in brackets) and
maybe a port number: what is shown of it in an error; anything else may be a password."""


def masked_url(raw: str) -> str:
    """`raw` as an error may show it: whatever could be a password replaced by `***`.

    The text is refused, so where its password lies is a guess, and the guess masks too much
    rather than too little: after the user name up to the last `@`, after a `:` in the host
    part unless a host and a port number are all it holds, and any `?` or `#` part (where a
    `?password=` would be). Text that is no URL at all is masked whole.
    """
    scheme, separator, rest = raw.partition("://")
    if not separator:  # not a URL at all: a keyword string (`password=...`) shows nothing
        return "***"
    userinfo, at, hostpart = rest.rpartition("@")
    if ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    cut = min([i for i in map(hostpart.find, "/?#") if i >= 0], default=len(hostpart))
    authority, tail = hostpart[:cut], hostpart[cut:]
    if not HOST_AND_PORT.fullmatch(authority):
        authority = authority.split(":", 1)[0] + ":***"
    cut = min([i for i in map(tail.find, "?#") if i >= 0], default=len(tail))
    tail = tail[: cut + 1] + "***" if cut < len(tail) else tail
    return f"{scheme}{separator}{userinfo}{at}{authority}{tail}"


def database_url(name: str, raw: str) -> DatabaseUrl:
    """Accept `postgresql://` (or `postgres://`) with a host and a database name; refuse the
    rest naming the variable, its value shown with the password masked."""

    def no(problem: str) -> ConfigError:
        return refused(name, masked_url(raw), f"it must be {DATABASE_URL_SHAPE}: {problem}")

    text = raw.strip()
    if any(character.isspace() or not character.isprintable() for character in text):
        raise no("it has a space or a control character")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise no("its host or port cannot be read") from None
    if parts.scheme not in POSTGRES_SCHEMES:
        raise no("it is not a postgresql:// address (unset it for SQLite at TOMORI_DB_PATH)")
    if not parts.hostname:
        raise no("the host is missing")
    if "," in parts.hostname:
        raise no("it names more than one host")
    if port == 0:
        raise no("the port is 0")
    database = unquote(parts.path.removeprefix("/"))
    if not database or "/" in parts.path[1:]:
        raise no("the database name is missing, or has a /")
    if "?" in text or "#" in text:
        raise no("a ?... or #... part is not read here; leave it out")
    return DatabaseUrl(
        host=parts.hostname,
        database=database,
        port=port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
    )


def as_text(value: object) -> str:
    """A setting's value as its variable would be written (an unset one as nothing)."""
    if value is None:
        return ""
    if isinstance(value, int) and value.bit_length() > 256:
        return "9" * 80  # past every bound; `str` refuses ints of over 4300 digits
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, frozenset | set):
        return ",".join(str(item) for item in sorted(value, key=str))
    if isinstance(value, tuple | list):
        return ",".join(str(item) for item in value)
    return str(value)


def shown(value: object) -> str:
    if isinstance(value, int) and value.bit_length() > 256:
        return f"<an integer of {value.bit_length()} bits>"
    return repr(value)


def kind_of(parsed: object) -> str:
    """What a parser made, for a message: `int`, `frozenset of int`."""
    if isinstance(parsed, frozenset | tuple) and parsed:
        return f"{type(parsed).__name__} of {type(next(iter(parsed))).__name__}"
    return type(parsed).__name__


def same_kind(value: object, parsed: object) -> bool:
    """Whether a field holds what its variable's parser makes (`True` is no history limit)."""
    if isinstance(value, bool) != isinstance(parsed, bool):
        return False
    if isinstance(parsed, frozenset | tuple):
        return isinstance(value, type(parsed)) and parsed == value
    return isinstance(value, type(parsed))


class DecimalParser:
    """Reads a plain decimal number (`0.7`, `1`) from `minimum` to `maximum`, ASCII only.

    No exponent, sign, `nan` or `inf`: `float` reads all of those, and none is a value a bot
    author means; at most six digits on each side of the point.
    """

    def __init__(self, minimum: float, maximum: float) -> None:
        self.minimum = minimum
        self.maximum = maximum
        self.allowed = f"a decimal number from {minimum:g} to {maximum:g} (such as 0.7)"

    def __call__(self, name: str, raw: str) -> float:
        text = raw.strip()
        if (
            not re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,6})?", text, flags=re.ASCII)
            or not self.minimum <= float(text) <= self.maximum
        ):
            raise refuse(name, raw, self.allowed)
        return float(text)


def decimal(minimum: float, maximum: float) -> DecimalParser:
    return DecimalParser(minimum, maximum)
