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

from tomori.config.database_url import DatabaseUrl, database_url, masked_url
from tomori.config.parsers import (
    HOUR_MS,
    WEEK_MS,
    ConfigError,
    IntegerParser,
    as_text,
    channel_ids,
    choice,
    db_path,
    decimal,
    flag,
    integer,
    kind_of,
    refuse,
    same_kind,
    shown,
    text,
)

__all__ = [
    "VARIABLES",
    "ConfigError",
    "DatabaseUrl",
    "Delivery",
    "IntegerParser",
    "KillPolicy",
    "Settings",
    "Variable",
]


class Delivery(StrEnum):
    MESSAGES = "messages"
    EDIT = "edit"


class KillPolicy(StrEnum):
    ANYONE = "anyone"
    REQUESTER = "requester"


CURRENT_TIME_NAME = "current_time"
READ_MESSAGE_NAME = "read_message"
BUILTIN_TOOLS = (CURRENT_TIME_NAME, READ_MESSAGE_NAME)
"""The tools tomori-cog itself offers the model, by the names they are built with (the core
builds `current_time`, the cog `read_message`, which reads Discord): named here, where
`TOMORI_TOOLS` is read, so renaming one renames it everywhere and none can drop out of the
default set unnoticed."""

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
    tools: frozenset[str] = frozenset(BUILTIN_TOOLS)
    delivery_timeout_ms: int = 120_000
    max_messages_per_answer: int = 10
    db_busy_timeout_ms: int = 5_000
    db_url: DatabaseUrl | None = None
    reply_chain_limit: int = 10
    max_image_bytes: int = 10_000_000
    max_images: int = 4
    max_attachment_chars: int = 20_000
    max_output_tokens: int | None = None
    temperature: float | None = None
    user_cooldown_ms: int = 0
    user_daily_tokens: int = 0
    max_bot_turns: int = 3

    def __post_init__(self) -> None:
        """Check every field as its variable would be checked: same parser, same bounds."""
        for variable in VARIABLES:
            value = getattr(self, variable.field)
            if value is None and variable.optional:
                continue
            try:
                parsed = variable.parse(as_text(value))
            except ConfigError as error:
                reason = error.reason
            else:
                if same_kind(value, parsed):
                    continue
                reason = f"it must be a {kind_of(parsed)}, as {variable.name} gives"
            raise ConfigError(
                f"Settings({variable.field}={variable.show(value)}) is not allowed: {reason}",
                reason,
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

    @property
    def user_cooldown_s(self) -> float:
        return self.user_cooldown_ms / 1000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every variable; raise `ConfigError` on the first bad one.

        An optional variable set to nothing (`TOMORI_DB_URL=` left empty in a .env file) is
        unset, as the providers' optional `*_BASE_URL` variables are."""
        env = os.environ if environ is None else environ
        values = {
            variable.field: variable.parse(env[variable.name])
            for variable in VARIABLES
            if variable.name in env and (env[variable.name].strip() or not variable.optional)
        }
        return cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Variable:
    """One environment variable: the setting it fills, how it is read, what it means."""

    name: str
    field: str
    parser: Callable[[str, str], object]
    help: str
    optional: bool = False
    """Whether its setting may be None: the variable unset (or set to nothing), what it turns on
    stays off."""
    secret: bool = False
    """Whether its text may hold a password, which no error may show (its parser masks it)."""

    def parse(self, raw: str) -> object:
        return self.parser(self.name, raw)

    def show(self, value: object) -> str:
        """A field's value as an error shows it: with any password masked."""
        return repr(masked_url(value)) if self.secret and isinstance(value, str) else shown(value)

    @property
    def allowed(self) -> str:
        """What a number may be ("a positive integer up to ..."), or "" for other kinds."""
        return str(getattr(self.parser, "allowed", ""))

    @property
    def default(self) -> str:
        return as_text(getattr(Settings(), self.field)) or "(none)"


def _tool_names(name: str, raw: str) -> frozenset[str]:
    pieces = [piece.strip().lower() for piece in raw.split(",") if piece.strip()]
    if any(piece not in BUILTIN_TOOLS for piece in pieces):
        known = ", ".join(BUILTIN_TOOLS)
        raise refuse(name, raw, f"built-in tool names separated by commas ({known}), or empty")
    return frozenset(pieces)


COOLDOWN_MS = integer(0)
"""One user's least time between turns in a server: milliseconds up to a day, 0 for none; the
same bound for `TOMORI_USER_COOLDOWN_MS` and a server's `/tomori limits`."""

DAILY_TOKENS = integer(0, unit="tokens", maximum=1_000_000_000)
"""One user's most tokens per UTC day in a server, 0 for no limit (as `COOLDOWN_MS`)."""

VARIABLES: tuple[Variable, ...] = (
    Variable(
        "STREAM_FIRST_TOKEN_TIMEOUT_MS",
        "stream_first_token_timeout_ms",
        integer(1),
        "wait for the provider's first chunk (never below the idle budget)",
    ),
    Variable(
        "STREAM_SDK_CALL_TIMEOUT_MS",
        "stream_sdk_call_timeout_ms",
        integer(1),
        "idle budget, re-armed by every chunk and every Discord send",
    ),
    Variable(
        "STREAM_ABANDONED_SETTLE_TIMEOUT_MS",
        "stream_abandoned_settle_timeout_ms",
        integer(0, maximum=HOUR_MS),
        "after a timeout, wait this long for a send already on the wire (0 disables)",
    ),
    Variable(
        "CHANNEL_LOCK_TIMEOUT_MS",
        "channel_lock_timeout_ms",
        integer(1, maximum=WEEK_MS),
        "a lock with no progress and no watchdog for this long is stale",
    ),
    Variable(
        "TOMORI_QUEUE_MAX_AGE_MS",
        "queue_max_age_ms",
        integer(1, maximum=WEEK_MS),
        "queued messages older than this are dropped when their turn comes",
    ),
    Variable(
        "DISCORD_TYPING_KEEPALIVE_INTERVAL_MS",
        "typing_keepalive_interval_ms",
        integer(1),
        "how often the typing indicator is refreshed while a turn works",
    ),
    Variable(
        "STREAM_EDIT_INTERVAL_MS",
        "stream_edit_interval_ms",
        integer(1),
        "edit mode: at most one edit of the growing message this often",
    ),
    Variable(
        "TOMORI_HISTORY_LIMIT",
        "history_limit",
        integer(1, unit="messages", maximum=1_000),
        "how many recent channel messages the model sees",
    ),
    Variable(
        "TOOL_EXECUTION_TIMEOUT_MS",
        "tool_execution_timeout_ms",
        integer(1),
        "a tool still running after this long fails with a timeout",
    ),
    Variable(
        "BOT_MAX_FUNCTION_CALL_ITERATIONS",
        "max_function_call_iterations",
        integer(1, unit="passes", maximum=1_000),
        "most model passes in one turn's tool loop",
    ),
    Variable(
        "BOT_MAX_CONSECUTIVE_TOOL_ERRORS",
        "max_consecutive_tool_errors",
        integer(1, unit="failures", maximum=1_000),
        "tool failures in a row that end the turn",
    ),
    Variable("TOMORI_DB_PATH", "db_path", db_path, "the SQLite file (its folder must exist)"),
    Variable(
        "TOMORI_STREAM_DELIVERY",
        "delivery",
        choice(Delivery),
        "messages: discrete messages at safe boundaries; edit: one message edited as it grows",
    ),
    Variable(
        "TOMORI_KILL_POLICY",
        "kill_policy",
        choice(KillPolicy),
        "anyone: whoever can use /kill; requester: the turn's requester and Manage Messages",
    ),
    Variable(
        "TOMORI_CHANNELS",
        "channels",
        channel_ids,
        "channel IDs where every message gets a reply (silently: no error notices)",
    ),
    Variable(
        "TOMORI_REPLY_TO_BOTS",
        "reply_to_bots",
        flag,
        "1 to answer other bots and webhooks too",
    ),
    Variable(
        "TOMORI_SYSTEM_PROMPT",
        "system_prompt",
        text,
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
        integer(1),
        "once the model has finished, the wait for each Discord send still to land",
    ),
    Variable(
        "TOMORI_MAX_MESSAGES_PER_ANSWER",
        "max_messages_per_answer",
        integer(1, unit="messages"),
        "most Discord messages one answer may fill; past it the answer is cut with a note",
    ),
    Variable(
        "TOMORI_DB_BUSY_TIMEOUT_MS",
        "db_busy_timeout_ms",
        integer(1),
        "one wait for another process's database write lock; past it the write is retried",
    ),
    Variable(
        "TOMORI_DB_URL",
        "db_url",
        database_url,
        "PostgreSQL instead of SQLite, for a bot whose processes run on several machines: "
        "postgresql://user:password@host:port/dbname, with ?sslmode=require for TLS",
        optional=True,
        secret=True,
    ),
    Variable(
        "TOMORI_REPLY_CHAIN_LIMIT",
        "reply_chain_limit",
        integer(0, unit="messages", maximum=100),
        "how far back a reply chain is followed for messages older than the history; 0 for not",
    ),
    Variable(
        "TOMORI_MAX_IMAGE_BYTES",
        "max_image_bytes",
        integer(1, unit="bytes", maximum=100_000_000),
        "an image larger than this is not sent to the model, which is told it was too large",
    ),
    Variable(
        "TOMORI_MAX_IMAGES",
        "max_images",
        integer(0, unit="images", maximum=100),
        "most images one request carries, newest first, the trigger's own before history's; "
        "0 sends none",
    ),
    Variable(
        "TOMORI_MAX_ATTACHMENT_CHARS",
        "max_attachment_chars",
        integer(0, unit="characters", maximum=1_000_000),
        "a text file attached is given to the model up to this many characters, then cut with "
        "a marker; 0 names text files without reading them",
    ),
    Variable(
        "TOMORI_MAX_OUTPUT_TOKENS",
        "max_output_tokens",
        integer(1, unit="tokens", maximum=1_000_000),
        "most tokens one model pass may write (unset: the provider's default)",
        optional=True,
    ),
    Variable(
        "TOMORI_TEMPERATURE",
        "temperature",
        decimal(0, 2),
        "sampling temperature sent to every model (unset: the provider's default)",
        optional=True,
    ),
    Variable(
        "TOMORI_USER_COOLDOWN_MS",
        "user_cooldown_ms",
        COOLDOWN_MS,
        "least time between two turns one user starts in one server; 0 for none",
    ),
    Variable(
        "TOMORI_USER_DAILY_TOKENS",
        "user_daily_tokens",
        DAILY_TOKENS,
        "most tokens one user may spend per UTC day in one server; 0 for no limit",
    ),
    Variable(
        "TOMORI_MAX_BOT_TURNS",
        "max_bot_turns",
        integer(1, unit="turns", maximum=1_000),
        "with TOMORI_REPLY_TO_BOTS=1: most turns in a row bots may start in one channel "
        "before a human speaks",
    ),
)
