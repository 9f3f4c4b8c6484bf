"""Settings read from the environment, checked once at start-up.

The variable names and defaults are a public contract (the README's settings table): bot
authors set them. A bad value must stop start-up with one line naming the variable, the value
and what is allowed, rather than silently falling back to a default the author did not choose,
or being accepted and failing later in the middle of a turn (a 400-digit timeout overflows the
event loop's timer). A `Settings(...)` built in code is checked by the very same parsers, so
each variable's bounds are written once, where the variable is declared.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class ConfigError(ValueError):
    """A setting has a value the bot cannot run with; the message says which and why.

    `reason` is the part after the name and value ("it must be ..."), so the same refusal can
    be worded for an environment variable or for a `Settings` field.
    """

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class Delivery(StrEnum):
    MESSAGES = "messages"
    EDIT = "edit"


class KillPolicy(StrEnum):
    ANYONE = "anyone"
    REQUESTER = "requester"


DEFAULT_SYSTEM_PROMPT = (
    "You are Tomori, a friendly and helpful assistant chatting in a Discord server. "
    "Answer in the language you are spoken to, and keep replies concise."
)

BUILTIN_TOOLS = ("current_time", "read_message")
"""The tools tomori-cog itself offers the model; `TOMORI_TOOLS` picks among them (many small
local models refuse any request that carries tools, so they must be able to go)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Every tunable of tomori-cog, in milliseconds where it is a duration."""

    stream_first_token_timeout_ms: int = 300_000
    stream_sdk_call_timeout_ms: int = 120_000
    stream_abandoned_settle_timeout_ms: int = 5_000
    channel_lock_timeout_ms: int = 180_000
    queue_max_age_ms: int = 600_000
    typing_keepalive_interval_ms: int = 8_000
    stream_edit_interval_ms: int = 1_000
    history_limit: int = 20
    tool_execution_timeout_ms: int = 300_000
    max_function_call_iterations: int = 100
    max_consecutive_tool_errors: int = 5
    db_path: Path = Path("tomori.db")
    delivery: Delivery = Delivery.MESSAGES
    kill_policy: KillPolicy = KillPolicy.ANYONE
    channels: frozenset[int] = frozenset()
    reply_to_bots: bool = False
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    tools: frozenset[str] = frozenset(BUILTIN_TOOLS)
    delivery_timeout_ms: int = 120_000
    max_messages_per_answer: int = 10
    db_busy_timeout_ms: int = 5_000

    def __post_init__(self) -> None:
        """Check every field as its variable would be checked: same parser, same bounds."""
        for variable in VARIABLES:
            value = getattr(self, variable.field)
            try:
                parsed = variable.parse(_as_text(value))
            except ConfigError as error:
                reason = error.reason
            else:
                if _same_kind(value, parsed):
                    continue
                reason = f"it must be a {_kind(parsed)}, as {variable.name} gives"
            raise ConfigError(
                f"Settings({variable.field}={_shown(value)}) is not allowed: {reason}", reason
            )

    @property
    def first_token_budget_s(self) -> float:
        """The wait for the first token, never shorter than the idle budget."""
        return max(self.stream_first_token_timeout_ms, self.stream_sdk_call_timeout_ms) / 1000

    @property
    def idle_budget_s(self) -> float:
        return self.stream_sdk_call_timeout_ms / 1000

    @property
    def settle_budget_s(self) -> float:
        return self.stream_abandoned_settle_timeout_ms / 1000

    @property
    def delivery_budget_s(self) -> float:
        """The wait for each send once the model has finished; never below the edit interval,
        which edit mode waits out before its last edit."""
        return max(self.delivery_timeout_ms, self.stream_edit_interval_ms) / 1000

    @property
    def lock_timeout_s(self) -> float:
        return self.channel_lock_timeout_ms / 1000

    @property
    def queue_max_age_s(self) -> float:
        return self.queue_max_age_ms / 1000

    @property
    def db_busy_timeout_s(self) -> float:
        return self.db_busy_timeout_ms / 1000

    @property
    def typing_interval_s(self) -> float:
        return self.typing_keepalive_interval_ms / 1000

    @property
    def edit_interval_s(self) -> float:
        return self.stream_edit_interval_ms / 1000

    @property
    def tool_timeout_s(self) -> float:
        return self.tool_execution_timeout_ms / 1000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every variable; raise `ConfigError` on the first bad one."""
        env = os.environ if environ is None else environ
        values = {
            variable.field: variable.parse(env[variable.name])
            for variable in VARIABLES
            if variable.name in env
        }
        return cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Variable:
    """One environment variable: the setting it fills, how it is read, what it means."""

    name: str
    field: str
    parser: Callable[[str, str], object]
    help: str

    def parse(self, raw: str) -> object:
        return self.parser(self.name, raw)

    @property
    def allowed(self) -> str:
        """What a number may be ("a positive integer up to ..."), or "" for other kinds."""
        return str(getattr(self.parser, "allowed", ""))

    @property
    def default(self) -> str:
        return _as_text(getattr(Settings(), self.field)) or "(none)"


def _as_text(value: object) -> str:
    """A setting's value as its variable would be written."""
    if isinstance(value, int) and value.bit_length() > 256:
        return "9" * 80  # past every bound; `str` refuses ints of over 4300 digits
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, frozenset | set):
        return ",".join(str(item) for item in sorted(value, key=str))
    if isinstance(value, tuple | list):
        return ",".join(str(item) for item in value)
    return str(value)


def _shown(value: object) -> str:
    if isinstance(value, int) and value.bit_length() > 256:
        return f"<an integer of {value.bit_length()} bits>"
    return repr(value)


def _kind(parsed: object) -> str:
    """What a parser made, for a message: `int`, `frozenset of int`."""
    if isinstance(parsed, frozenset | tuple) and parsed:
        return f"{type(parsed).__name__} of {type(next(iter(parsed))).__name__}"
    return type(parsed).__name__


def _same_kind(value: object, parsed: object) -> bool:
    """Whether a field holds what its variable's parser makes (`True` is no history limit)."""
    if isinstance(value, bool) != isinstance(parsed, bool):
        return False
    if isinstance(parsed, frozenset | tuple):
        return isinstance(value, type(parsed)) and parsed == value
    return isinstance(value, type(parsed))


def _refused(name: str, raw: str, reason: str) -> ConfigError:
    return ConfigError(f"{name}={raw!r} is not allowed: {reason}", reason)


def _refuse(name: str, raw: str, allowed: str) -> ConfigError:
    return _refused(name, raw, f"it must be {allowed}")


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
            raise _refuse(name, raw, self.allowed)
        return int(text)


def _integer(
    minimum: int, unit: str = "milliseconds", *, maximum: int | None = None
) -> IntegerParser:
    return IntegerParser(minimum, unit, maximum)


def _choice(kind: type[StrEnum]) -> Callable[[str, str], StrEnum]:
    def parse(name: str, raw: str) -> StrEnum:
        try:
            return kind(raw.strip().lower())
        except ValueError:
            raise _refuse(
                name, raw, "one of " + ", ".join(member.value for member in kind)
            ) from None

    return parse


def _flag(name: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text not in ("0", "1", "true", "false"):
        raise _refuse(name, raw, "1 or 0 (or true/false)")
    return text in ("1", "true")


SNOWFLAKE = IntegerParser(1, "a Discord ID", 2**64 - 1)
"""A channel ID: Discord's IDs are unsigned 64-bit numbers."""


def _channel_ids(name: str, raw: str) -> frozenset[int]:
    pieces = [piece.strip() for piece in raw.split(",") if piece.strip()]
    try:
        return frozenset(SNOWFLAKE(name, piece) for piece in pieces)
    except ConfigError:
        raise _refuse(
            name, raw, f"channel IDs (numbers from 1 to {SNOWFLAKE.maximum}) separated by commas"
        ) from None


def _text(name: str, raw: str) -> str:
    if not raw.strip():
        raise _refuse(name, raw, "some text (unset it to use the default)")
    return raw


def _db_path(name: str, raw: str) -> Path:
    """Accept a file path whose folder exists; refuse what SQLite could never open."""
    if not raw.strip() or "\0" in raw:
        raise _refuse(name, raw, "a file path")
    path = Path(raw).expanduser()
    try:
        if path.is_dir():
            raise _refused(name, raw, "it is a folder, not a file")
        if not path.parent.is_dir():
            raise _refused(name, raw, f"its folder {str(path.parent)!r} does not exist")
    except OSError as error:  # a name too long, a folder we may not enter
        raise _refused(name, raw, f"it cannot be checked ({error.strerror})") from None
    return path


def _tool_names(name: str, raw: str) -> frozenset[str]:
    pieces = [piece.strip().lower() for piece in raw.split(",") if piece.strip()]
    if any(piece not in BUILTIN_TOOLS for piece in pieces):
        known = ", ".join(BUILTIN_TOOLS)
        raise _refuse(name, raw, f"built-in tool names separated by commas ({known}), or empty")
    return frozenset(pieces)


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "STREAM_FIRST_TOKEN_TIMEOUT_MS",
        "stream_first_token_timeout_ms",
        _integer(1),
        "wait for the provider's first chunk (never below the idle budget)",
    ),
    Variable(
        "STREAM_SDK_CALL_TIMEOUT_MS",
        "stream_sdk_call_timeout_ms",
        _integer(1),
        "idle budget, re-armed by every chunk and every Discord send",
    ),
    Variable(
        "STREAM_ABANDONED_SETTLE_TIMEOUT_MS",
        "stream_abandoned_settle_timeout_ms",
        _integer(0, maximum=HOUR_MS),
        "after a timeout, wait this long for a send already on the wire (0 disables)",
    ),
    Variable(
        "CHANNEL_LOCK_TIMEOUT_MS",
        "channel_lock_timeout_ms",
        _integer(1, maximum=WEEK_MS),
        "a lock with no progress and no watchdog for this long is stale",
    ),
    Variable(
        "TOMORI_QUEUE_MAX_AGE_MS",
        "queue_max_age_ms",
        _integer(1, maximum=WEEK_MS),
        "queued messages older than this are dropped when their turn comes",
    ),
    Variable(
        "DISCORD_TYPING_KEEPALIVE_INTERVAL_MS",
        "typing_keepalive_interval_ms",
        _integer(1),
        "how often the typing indicator is refreshed while a turn works",
    ),
    Variable(
        "STREAM_EDIT_INTERVAL_MS",
        "stream_edit_interval_ms",
        _integer(1),
        "edit mode: at most one edit of the growing message this often",
    ),
    Variable(
        "TOMORI_HISTORY_LIMIT",
        "history_limit",
        _integer(1, unit="messages", maximum=1_000),
        "how many recent channel messages the model sees",
    ),
    Variable(
        "TOOL_EXECUTION_TIMEOUT_MS",
        "tool_execution_timeout_ms",
        _integer(1),
        "a tool still running after this long fails with a timeout",
    ),
    Variable(
        "BOT_MAX_FUNCTION_CALL_ITERATIONS",
        "max_function_call_iterations",
        _integer(1, unit="passes", maximum=1_000),
        "most model passes in one turn's tool loop",
    ),
    Variable(
        "BOT_MAX_CONSECUTIVE_TOOL_ERRORS",
        "max_consecutive_tool_errors",
        _integer(1, unit="failures", maximum=1_000),
        "tool failures in a row that end the turn",
    ),
    Variable("TOMORI_DB_PATH", "db_path", _db_path, "the SQLite file (its folder must exist)"),
    Variable(
        "TOMORI_STREAM_DELIVERY",
        "delivery",
        _choice(Delivery),
        "messages: discrete messages at safe boundaries; edit: one message edited as it grows",
    ),
    Variable(
        "TOMORI_KILL_POLICY",
        "kill_policy",
        _choice(KillPolicy),
        "anyone: whoever can use /kill; requester: the turn's requester and Manage Messages",
    ),
    Variable(
        "TOMORI_CHANNELS",
        "channels",
        _channel_ids,
        "channel IDs where every message gets a reply (silently: no error notices)",
    ),
    Variable(
        "TOMORI_REPLY_TO_BOTS",
        "reply_to_bots",
        _flag,
        "1 to answer other bots and webhooks too",
    ),
    Variable(
        "TOMORI_SYSTEM_PROMPT",
        "system_prompt",
        _text,
        "the system prompt, sent first",
    ),
    Variable(
        "TOMORI_TOOLS",
        "tools",
        _tool_names,
        "built-in tools offered to the model, comma separated; empty for none "
        "(tools added with register_tool are always offered)",
    ),
    Variable(
        "TOMORI_DELIVERY_TIMEOUT_MS",
        "delivery_timeout_ms",
        _integer(1),
        "once the model has finished, the wait for each Discord send still to land",
    ),
    Variable(
        "TOMORI_MAX_MESSAGES_PER_ANSWER",
        "max_messages_per_answer",
        _integer(1, unit="messages"),
        "most Discord messages one answer may fill; past it the answer is cut with a note",
    ),
    Variable(
        "TOMORI_DB_BUSY_TIMEOUT_MS",
        "db_busy_timeout_ms",
        _integer(1),
        "one wait for another process's database write lock; past it the write is retried",
    ),
)
