"""How the text of an environment variable becomes a setting's value, or a `ConfigError`.

Each parser takes the variable's name and its raw text and returns a value within the bounds
it declares, or raises `ConfigError` with one line naming the variable, the value and what is
allowed: the only two outcomes, whatever the text (digit-like characters such as `²`, numbers
of any length, NUL bytes). `tomori.config.settings` declares which parser each variable uses.
The way back (`as_text`: a value written as its variable's text) lets a `Settings(...)` built
in code be checked by the very same parsers.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

from tomori.errors import TomoriError


class ConfigError(TomoriError, ValueError):
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


def choice[Choice: StrEnum](kind: type[Choice]) -> Callable[[str, str], Choice]:
    def parse(name: str, raw: str) -> Choice:
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
    """What a parser made, with its article, for a message: `an int`, `a frozenset of int`."""
    name = type(parsed).__name__
    if isinstance(parsed, frozenset | tuple) and parsed:
        name = f"{name} of {type(next(iter(parsed))).__name__}"
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


def same_kind(value: object, parsed: object) -> bool:
    """Whether a field holds what its variable's parser makes (`True` is no history limit)."""
    if isinstance(value, bool) != isinstance(parsed, bool):
        return False
    if isinstance(parsed, frozenset | tuple):
        return isinstance(value, type(parsed)) and parsed == value
    return isinstance(value, type(parsed))


class DecimalParser:
    """Reads a plain decimal number (`0.7`, `.7`, `1`, `1.`) from `minimum` to `maximum`,
    ASCII only.

    No exponent, sign, `nan` or `inf`: `float` reads all of those, and none is a value a bot
    author means; at most six digits on each side of the point, and at least one in all.
    """

    def __init__(self, minimum: float, maximum: float) -> None:
        self.minimum = minimum
        self.maximum = maximum
        self.allowed = f"a decimal number from {minimum:g} to {maximum:g} (such as 0.7)"

    def __call__(self, name: str, raw: str) -> float:
        text = raw.strip()
        if (
            not re.fullmatch(r"[0-9]{1,6}(\.[0-9]{0,6})?|\.[0-9]{1,6}", text, flags=re.ASCII)
            or not self.minimum <= float(text) <= self.maximum
        ):
            raise refuse(name, raw, self.allowed)
        return float(text)


def decimal(minimum: float, maximum: float) -> DecimalParser:
    return DecimalParser(minimum, maximum)


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (its parent package aside): what
    an extra of the package brings may be missing."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or one without a spec
        return False


def install_extra(extra: str) -> str:
    """How to install the package's `extra`, for an error that found it missing."""
    return f"pip install 'tomori-cog[{extra}]' (from a clone: pip install -e '.[{extra}]')"


LISTEN_ADDRESS = "host:port (127.0.0.1:9108, 0.0.0.0:9108, [::]:9108; port 0 picks a free one)"


def listen_address(name: str, raw: str) -> str:
    """Accept `host:port` to serve on; refuse it while the `metrics` extra (prometheus_client)
    is missing, which what is served there needs."""
    text = raw.strip()
    host, colon, port = text.rpartition(":")
    bare = host.removeprefix("[").removesuffix("]")
    if (
        not colon
        or not bare
        or any(c.isspace() or c in "/@" for c in bare)
        or not (port.isascii() and port.isdigit() and len(port) <= 5 and int(port) <= 65_535)
    ):
        raise refuse(name, raw, LISTEN_ADDRESS)
    if not installed("prometheus_client"):
        raise refused(
            name,
            raw,
            "it needs the metrics extra, which is not installed (its client, prometheus_client, "
            f"is missing): {install_extra('metrics')}",
        )
    return text


def split_address(address: str) -> tuple[str, int]:
    """The host and the port of an address `listen_address` accepted."""
    host, _, port = address.rpartition(":")
    return host.removeprefix("[").removesuffix("]"), int(port)
