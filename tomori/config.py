"""Settings read from the environment, checked once at start-up.

The variable names and defaults are a public contract (BEHAVIOR.md): bot authors set them. A bad
value must stop start-up with a message naming the variable, the value and what is allowed,
rather than silently falling back to a default the author did not choose.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class ConfigError(ValueError):
    """A setting has a value the bot cannot run with; the message says which and why."""


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
    db_busy_timeout_ms: int = 5_000

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
    def default(self) -> str:
        value = getattr(Settings(), self.field)
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, frozenset):
            return ",".join(str(item) for item in sorted(value)) or "(none)"
        return str(value)


def _refuse(name: str, raw: str, allowed: str) -> ConfigError:
    return ConfigError(f"{name}={raw!r} is not allowed: it must be {allowed}")


def _integer(minimum: int, unit: str = "milliseconds") -> Callable[[str, str], int]:
    allowed = "a positive integer" if minimum == 1 else "a non-negative integer"
    note = f" ({unit}{', 0 disables' if minimum == 0 else ''})"

    def parse(name: str, raw: str) -> int:
        text = raw.strip()
        value = int(text) if text.isdigit() else None
        if value is None or value < minimum:
            raise _refuse(name, raw, allowed + note)
        return value

    return parse


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
        raise _refuse(name, raw, "1 or 0")
    return text in ("1", "true")


def _channel_ids(name: str, raw: str) -> frozenset[int]:
    pieces = [piece.strip() for piece in raw.split(",") if piece.strip()]
    if not all(piece.isdigit() for piece in pieces):
        raise _refuse(name, raw, "channel IDs (numbers) separated by commas")
    return frozenset(int(piece) for piece in pieces)


def _text(name: str, raw: str) -> str:
    if not raw.strip():
        raise _refuse(name, raw, "some text (unset it to use the default)")
    return raw


def _db_path(name: str, raw: str) -> Path:
    """Accept a file path whose folder exists; refuse what SQLite could never open."""
    if not raw.strip():
        raise _refuse(name, raw, "a file path")
    path = Path(raw).expanduser()
    if path.is_dir():
        raise ConfigError(f"{name}={raw!r} is not allowed: it is a folder, not a file")
    if not path.parent.is_dir():
        raise ConfigError(
            f"{name}={raw!r} is not allowed: its folder {str(path.parent)!r} does not exist"
        )
    return path


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
        _integer(0),
        "after a timeout, wait this long for a send already on the wire (0 disables)",
    ),
    Variable(
        "CHANNEL_LOCK_TIMEOUT_MS",
        "channel_lock_timeout_ms",
        _integer(1),
        "a lock with no progress and no watchdog for this long is stale",
    ),
    Variable(
        "TOMORI_QUEUE_MAX_AGE_MS",
        "queue_max_age_ms",
        _integer(1),
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
        _integer(1, unit="messages"),
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
        _integer(1, unit="passes"),
        "most model passes in one turn's tool loop",
    ),
    Variable(
        "BOT_MAX_CONSECUTIVE_TOOL_ERRORS",
        "max_consecutive_tool_errors",
        _integer(1, unit="failures"),
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
        "TOMORI_DB_BUSY_TIMEOUT_MS",
        "db_busy_timeout_ms",
        _integer(1),
        "one wait for another process's database write lock; past it the write is retried",
    ),
)
