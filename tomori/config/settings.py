"""Settings read from the environment, checked once at start-up.

The variable names and defaults are a public contract (docs/configuration.md): bot authors set
them. A bad value must stop start-up with one line naming the variable, the value and what is
allowed, rather than silently falling back to a default the author did not choose, or being
accepted and failing later in the middle of a turn (a 400-digit timeout overflows the event
loop's timer). Each setting is declared once, as a `Settings` field made by `setting`: its
variable, default, parser and help travel in the field, and `VARIABLES` (which `from_env`,
`--help` and docs/configuration.md read) is read back from the fields, so none can drift. A
`Settings(...)` built in code is checked by the very same parsers.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from enum import StrEnum
from pathlib import Path

from tomori.config.database_url import DatabaseUrl, database_url, masked_url
from tomori.config.mcp_servers import mcp_config_file
from tomori.config.parsers import (
    DAY_MS,
    HOUR_MS,
    SNOWFLAKE,
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
    listen_address,
    refuse,
    same_kind,
    shown,
    text,
)

log = logging.getLogger(__name__)

__all__ = [
    "VARIABLES",
    "ConfigError",
    "DatabaseUrl",
    "Delivery",
    "IntegerParser",
    "KillPolicy",
    "LogFormat",
    "Settings",
    "Variable",
    "seconds",
]


class Delivery(StrEnum):
    MESSAGES = "messages"
    EDIT = "edit"


class KillPolicy(StrEnum):
    ANYONE = "anyone"
    REQUESTER = "requester"

    def stops_any(self, can_manage_messages: bool) -> bool:
        """Whether a member stops any answer (/kill, an answer's Stop button), not only the
        answer to them: a member with Manage Messages, or anyone under `anyone`."""
        return can_manage_messages or self is KillPolicy.ANYONE


class ShowProgress(StrEnum):
    """How a direct trigger shows its turn's progress (`tomori.delivery.progress`)."""

    REACTIONS = "reactions"
    OFF = "off"


class LogFormat(StrEnum):
    """How the `tomori` command writes its log lines (`tomori.log_lines`)."""

    TEXT = "text"
    """One line a person reads: time, level, logger, message."""
    JSON = "json"
    """One JSON object a line, with the fields of the turn a line is about, for a collector."""


class ShowErrors(StrEnum):
    """How a direct trigger whose turn failed is told so."""

    REPLY = "reply"
    """An embed replying in the channel, saying what went wrong."""
    REACT = "react"
    """The failed mark on the trigger, instead of the embed."""
    SILENT = "silent"
    """Nothing in the channel (the log still says it)."""


CURRENT_TIME_NAME = "current_time"
READ_MESSAGE_NAME = "read_message"
REMEMBER_NAME = "remember"
FORGET_NAME = "forget"
BUILTIN_TOOLS = (CURRENT_TIME_NAME, READ_MESSAGE_NAME, REMEMBER_NAME, FORGET_NAME)
"""The tools tomori-cog itself offers the model, by the names they are built with (the core
builds `current_time` and, where `TOMORI_MEMORIES` is on, `remember` and `forget` for each
turn's speaker; the cog `read_message`, which reads Discord): named here, where
`TOMORI_TOOLS` is read, so renaming one renames it everywhere and none can drop out of the
default set unnoticed."""

DEFAULT_SYSTEM_PROMPT = (
    "You are Tomori, a friendly and helpful assistant chatting in a Discord server. "
    "Answer in the language you are spoken to, and keep replies concise."
)


@dataclass(frozen=True, slots=True)
class Variable:
    """One environment variable: the `Settings` field it fills, how it is read, what it means."""

    name: str
    parser: Callable[[str, str], object]
    help: str
    secret: bool = False
    """Whether its text may hold a password, which no error may show (its parser masks it)."""
    field: str = ""
    """The `Settings` field it fills, named by the field that declares it."""
    default_value: object = None
    """That field's default: what an unset variable leaves."""

    @property
    def optional(self) -> bool:
        """Whether its setting may be None, as its default is: the variable unset (or set to
        nothing) leaves off what it turns on."""
        return self.default_value is None

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
        """The default as the variable would be written, or "(none)"."""
        return as_text(self.default_value) or "(none)"


def setting[T](
    name: str, default: T, parser: Callable[[str, str], T], help: str, *, secret: bool = False
) -> T:
    """A `Settings` field read from the variable `name` by `parser`: the one declaration of a
    setting. The field carries its `Variable` in its metadata; a type checker sees the
    default, and holds the parser to the field's type."""
    variable = Variable(name, parser, help, secret)
    return field(default=default, metadata={Variable: variable})


def _variable(declared: Field[object]) -> Variable:
    variable = declared.metadata.get(Variable)
    if not isinstance(variable, Variable):
        raise TypeError(f"Settings.{declared.name} is not declared with setting(...)")
    return replace(variable, field=declared.name, default_value=declared.default)


def _tool_names(name: str, raw: str) -> frozenset[str]:
    pieces = [piece.strip().lower() for piece in raw.split(",") if piece.strip()]
    if any(piece not in BUILTIN_TOOLS for piece in pieces):
        known = ", ".join(BUILTIN_TOOLS)
        raise refuse(name, raw, f"built-in tool names separated by commas ({known}), or empty")
    return frozenset(pieces)


MAX_STOP_WORD_CHARS = 20
"""A stop word is short: a message that merely contains one is not a stop."""

CLOSING_PUNCTUATION = ".!?,;:… "


def stop_word_form(text: str) -> str:
    """A word as stop words compare it, in a message as in `TOMORI_STOP_WORDS`: its case and
    its closing punctuation aside ("Stop!" and "stop" are one word)."""
    return text.strip().rstrip(CLOSING_PUNCTUATION).strip().lower()


def _stop_words(name: str, raw: str) -> frozenset[str]:
    pieces = [stop_word_form(piece) for piece in raw.split(",") if piece.strip()]
    if any(not piece or len(piece) > MAX_STOP_WORD_CHARS or " " in piece for piece in pieces):
        raise refuse(
            name,
            raw,
            f"single words of at most {MAX_STOP_WORD_CHARS} characters, comma separated (closing "
            "punctuation is ignored, so punctuation alone is no word)",
        )
    return frozenset(pieces)


def _application_ids(name: str, raw: str) -> frozenset[int]:
    pieces = [piece.strip() for piece in raw.split(",") if piece.strip()]
    try:
        return frozenset(SNOWFLAKE(name, piece) for piece in pieces)
    except ConfigError:
        raise refuse(
            name,
            raw,
            f"application IDs (numbers from 1 to {SNOWFLAKE.maximum}) separated by commas",
        ) from None


def summary_model(name: str, raw: str) -> str:
    """`provider:model` (as a `TOMORI_MODELS` entry names one, no suffix), or empty."""
    label = raw.strip()
    if not label:
        return ""
    provider, colon, model = label.partition(":")
    if not colon or not provider.strip() or not model.strip() or "+" in model or "," in label:
        raise refuse(name, raw, "provider:model (for example openai:gpt-4o-mini), or empty")
    return f"{provider.strip().lower()}:{model.strip()}"


def _plain_form(value: object, parsed: object) -> bool:
    """Whether `value` is the plain form of what its parser made from it: the text of a choice
    (`"edit"` for `Delivery.EDIT`), any collection of the right items (`[1, 2]` for
    `frozenset({1, 2})`), a path or an address as text, a whole number for a decimal. A
    `Settings(...)` built in code may give these, as a bot author would first write them; the
    field then holds what the parser made."""
    if isinstance(value, bool):
        return False
    if isinstance(parsed, StrEnum | Path | DatabaseUrl):
        return isinstance(value, str)
    if isinstance(parsed, float):
        return isinstance(value, int)
    if isinstance(parsed, frozenset) and isinstance(value, list | tuple | set | frozenset):
        kinds = {type(item) for item in parsed}
        return all(type(item) in kinds for item in value) and frozenset(value) == parsed
    return False


FULL_MESSAGE_CHARS = 1_950
"""What a message holds when the splitter fills it (`tomori.delivery.chunking.MESSAGE_LIMIT`
is this): Discord's 2,000 less room to keep a span whole. Declared here, below delivery, since
the answer ceiling is counted in such messages."""

DEFAULT_MAX_ANSWER_CHARS = 10 * FULL_MESSAGE_CHARS
"""Ten full messages: an answer longer than that is a model that does not stop, not an answer
anyone reads in a chat; a long but real answer (a 12,000-character guide) arrives whole."""

DEPRECATED_MAX_MESSAGES = "TOMORI_MAX_MESSAGES_PER_ANSWER"
"""The ceiling's former variable, in messages: still read, as that many full messages."""

COOLDOWN_MS = integer(0)
"""One user's least time between turns in a server: milliseconds up to a day, 0 for none; the
same bound for `TOMORI_USER_COOLDOWN_MS` and a server's `/tomori limits`."""

DAILY_TOKENS = integer(0, unit="tokens", maximum=1_000_000_000)
"""One user's most tokens per UTC day in a server, 0 for no limit (as `COOLDOWN_MS`)."""

MIN_CONTEXT_TOKENS = 256
"""The smallest context size a model may be given: less holds no system prompt and answer."""
MAX_CONTEXT_TOKENS = 10_000_000


@dataclass(frozen=True, slots=True)
class Settings:
    """Every tunable of tomori-cog, in milliseconds where it is a duration (`seconds` turns one
    into the seconds asyncio counts in).

    Each field is named for its variable: `history_limit` is `TOMORI_HISTORY_LIMIT`."""

    stream_first_token_timeout_ms: int = setting(
        "STREAM_FIRST_TOKEN_TIMEOUT_MS",
        300_000,
        integer(1),
        "wait for the provider's first chunk (never below the idle budget)",
    )
    stream_sdk_call_timeout_ms: int = setting(
        "STREAM_SDK_CALL_TIMEOUT_MS",
        120_000,
        integer(1),
        "idle budget, re-armed by every chunk and every Discord send",
    )
    stream_abandoned_settle_timeout_ms: int = setting(
        "STREAM_ABANDONED_SETTLE_TIMEOUT_MS",
        5_000,
        integer(0, maximum=HOUR_MS),
        "after a timeout, wait this long for a send already on the wire (0 disables)",
    )
    channel_lock_timeout_ms: int = setting(
        "CHANNEL_LOCK_TIMEOUT_MS",
        180_000,
        integer(1, maximum=WEEK_MS),
        "a lock with no progress and no watchdog for this long is stale",
    )
    queue_max_age_ms: int = setting(
        "TOMORI_QUEUE_MAX_AGE_MS",
        600_000,
        integer(1, maximum=WEEK_MS),
        "queued messages older than this are dropped when their turn comes",
    )
    queue_per_member: int = setting(
        "TOMORI_QUEUE_PER_MEMBER",
        3,
        integer(1, unit="messages", maximum=1_000),
        "most messages one member may have waiting in one channel's queue; one more is not "
        "queued, and its author is told the queue is full",
    )
    typing_keepalive_interval_ms: int = setting(
        "DISCORD_TYPING_KEEPALIVE_INTERVAL_MS",
        8_000,
        integer(1),
        "how often the typing indicator is refreshed while a turn has shown nothing yet (once "
        "its text flows, the text shows the bot at work)",
    )
    stream_edit_interval_ms: int = setting(
        "STREAM_EDIT_INTERVAL_MS",
        1_000,
        integer(1),
        "edit mode: at most one edit of the growing message this often",
    )
    history_limit: int = setting(
        "TOMORI_HISTORY_LIMIT",
        20,
        integer(1, unit="messages", maximum=1_000),
        "how many recent channel messages the model sees",
    )
    history_memory_channels: int = setting(
        "TOMORI_HISTORY_MEMORY_CHANNELS",
        500,
        integer(0, unit="channels", maximum=100_000),
        "how many channels' recent messages are kept from the gateway, so that a turn reads "
        "its history from them instead of asking Discord (the channel unused longest is "
        "forgotten first); 0 to ask Discord every turn",
    )
    tool_execution_timeout_ms: int = setting(
        "TOOL_EXECUTION_TIMEOUT_MS",
        300_000,
        integer(1),
        "a tool still running after this long fails with a timeout",
    )
    tool_confirm_timeout_ms: int = setting(
        "TOMORI_TOOL_CONFIRM_TIMEOUT_MS",
        60_000,
        integer(1_000, maximum=600_000),
        "a tool call that needs its asker's confirmation and got no answer this long is refused",
    )
    max_function_call_iterations: int = setting(
        "BOT_MAX_FUNCTION_CALL_ITERATIONS",
        100,
        integer(1, unit="passes", maximum=1_000),
        "most model passes in one turn's tool loop",
    )
    max_consecutive_tool_errors: int = setting(
        "BOT_MAX_CONSECUTIVE_TOOL_ERRORS",
        5,
        integer(1, unit="failures", maximum=1_000),
        "tool failures in a row that end the turn",
    )
    db_path: Path = setting(
        "TOMORI_DB_PATH", Path("tomori.db"), db_path, "the SQLite file (its folder must exist)"
    )
    delivery: Delivery = setting(
        "TOMORI_STREAM_DELIVERY",
        Delivery.MESSAGES,
        choice(Delivery),
        "messages: discrete messages at safe boundaries; edit: one message edited as it grows",
    )
    kill_policy: KillPolicy = setting(
        "TOMORI_KILL_POLICY",
        KillPolicy.REQUESTER,
        choice(KillPolicy),
        "requester: /kill stops the answer to its user and clears only their queued messages, "
        "while members with Manage Messages stop any and clear the queue; anyone: whoever can "
        "use /kill stops any answer and clears the queue (for a private bot)",
    )
    channels: frozenset[int] = setting(
        "TOMORI_CHANNELS",
        frozenset(),
        channel_ids,
        "channel IDs (1 to 2^64-1), comma separated, where every message gets a reply "
        "(silently: no error notices)",
    )
    reply_to_bots: bool = setting(
        "TOMORI_REPLY_TO_BOTS", False, flag, "1 to answer other bots and webhooks too"
    )
    stop_words: frozenset[str] = setting(
        "TOMORI_STOP_WORDS",
        frozenset({"stop", "cancel"}),
        _stop_words,
        "words that, sent alone by the user being answered, stop the answer and clear what "
        "they queued (in any case, closing punctuation . ! ? , ; : … aside: Stop! is stop); comma "
        "separated, empty for none; bot-wide (servers cannot change them)",
    )
    follow_ups: bool = setting(
        "TOMORI_FOLLOW_UPS",
        True,
        flag,
        "1: a new message of the user being answered stops the answer, and the next one "
        "covers it; 0: it queues (a server sets its own with /tomori)",
    )
    progress: ShowProgress = setting(
        "TOMORI_PROGRESS",
        ShowProgress.REACTIONS,
        choice(ShowProgress),
        "reactions: a message addressed to the bot shows its turn's progress as the bot's "
        "reaction on it (queued, working, a tool running; failed, stopped), each shown only "
        "once it lasted a second and removed once answered; off: none (a server sets its own "
        "with /tomori progress)",
    )
    errors: ShowErrors = setting(
        "TOMORI_ERRORS",
        ShowErrors.REPLY,
        choice(ShowErrors),
        "how a message addressed to the bot is told that its answer failed: reply (an embed "
        "saying why), react (a warning reaction on it instead) or silent (nothing; the log says "
        "it); a server sets its own with /tomori errors",
    )
    proxy_grace_ms: int = setting(
        "TOMORI_PROXY_GRACE_MS",
        1_500,
        integer(0, maximum=10_000),
        "in a server where a proxy bot (PluralKit, Tupperbox, TOMORI_PROXY_BOTS) is present, "
        "how long a person's message waits before it is answered: one the proxy deletes and "
        "reposts in that time is answered once, as its repost, for its author; elsewhere "
        "nothing waits; 0 for no wait (reposts are then never answered: a proxied message is "
        "answered as its original if its turn starts before the proxy deletes it)",
    )
    proxy_bots: frozenset[int] = setting(
        "TOMORI_PROXY_BOTS",
        frozenset(),
        _application_ids,
        "application IDs of proxy bots besides PluralKit and Tupperbox, comma separated: their "
        "webhooks' reposts are answered as the member's message",
    )
    system_prompt: str = setting(
        "TOMORI_SYSTEM_PROMPT", DEFAULT_SYSTEM_PROMPT, text, "the system prompt, sent first"
    )
    tools: frozenset[str] = setting(
        "TOMORI_TOOLS",
        frozenset(BUILTIN_TOOLS),
        _tool_names,
        "built-in tools offered to the model, comma separated; empty for none, for models "
        "that refuse tools (tools added with register_tool are always offered)",
    )
    mcp_config: Path | None = setting(
        "TOMORI_MCP_CONFIG",
        None,
        mcp_config_file,
        "a JSON file of MCP servers whose tools the model may call, as MCP clients write it: "
        '{"mcpServers": {"name": {"command": ..., "args": [...], "env": {...}} or {"url": ..., '
        '"headers": {...}}}}, ${VAR} in a value read from the environment (needs the mcp '
        "extra); each server's tools offered only in the Discord servers its "
        '"tomori": {"guilds": [...]} lists, and a call of one it does not mark read-only '
        '(or that its "confirm" names) runs only once the asking member allows it; a bad '
        "file stops start-up naming the server and the field",
    )
    mcp_result_max_chars: int = setting(
        "TOMORI_MCP_RESULT_MAX_CHARS",
        20_000,
        integer(1, unit="characters", maximum=1_000_000),
        "an MCP tool's result is given to the model up to this many characters of text, then "
        "cut with a marker (its images go to +vision models only, audio and files are named)",
    )
    delivery_timeout_ms: int = setting(
        "TOMORI_DELIVERY_TIMEOUT_MS",
        120_000,
        integer(1),
        "once the model has finished, the wait for each Discord send still to land (a 429, a "
        "slow network; never below the edit interval); past it the rest is dropped with a log "
        "line, and a direct asker is told the answer was cut short (never a timeout notice)",
    )
    log_format: LogFormat = setting(
        "TOMORI_LOG_FORMAT",
        LogFormat.TEXT,
        choice(LogFormat),
        "how the tomori command (and --console) writes its log (your own bot configures its "
        "own): text, a line a person reads; json, one object a line with time, level, logger, "
        "message and the turn's id, channel, model and outcome where a line is about a turn "
        "(never the words of a message at INFO)",
    )
    max_answer_chars: int = setting(
        "TOMORI_MAX_ANSWER_CHARS",
        DEFAULT_MAX_ANSWER_CHARS,
        integer(1, unit="characters", maximum=10_000_000),
        "most characters one answer may show, however many messages they take; past it the "
        f"answer is cut with a note ({DEPRECATED_MAX_MESSAGES}, its former form, is still read "
        f"as that many full messages of {FULL_MESSAGE_CHARS} characters, with a warning)",
    )
    db_busy_timeout_ms: int = setting(
        "TOMORI_DB_BUSY_TIMEOUT_MS",
        5_000,
        integer(1),
        "one wait for another process's database write lock; past it the write is retried",
    )
    db_url: DatabaseUrl | None = setting(
        "TOMORI_DB_URL",
        None,
        database_url,
        "PostgreSQL instead of SQLite (unset: SQLite at TOMORI_DB_PATH), for a bot whose "
        "processes run on several machines: postgresql://user:password@host:port/dbname (or "
        "postgres://; the port optional; @ : / ? # in the user or password %-encoded), "
        "optionally followed by TLS options such as ?sslmode=require; the password never "
        "appears in a log line or an error",
        secret=True,
    )
    reply_chain_limit: int = setting(
        "TOMORI_REPLY_CHAIN_LIMIT",
        10,
        integer(0, unit="messages", maximum=100),
        "how many messages back the chain of replies the trigger answers is followed, so the "
        "message being answered (and what it answered) is shown even when older than the "
        "history; 0 for not",
    )
    max_image_bytes: int = setting(
        "TOMORI_MAX_IMAGE_BYTES",
        10_000_000,
        integer(1, unit="bytes", maximum=100_000_000),
        "an image larger than this is not read or sent; the model is told it was too large",
    )
    max_images: int = setting(
        "TOMORI_MAX_IMAGES",
        4,
        integer(0, unit="images", maximum=100),
        "most images one request carries, newest first, the trigger's own before history's; "
        "the model is told of those left out; 0 sends none",
    )
    max_attachment_chars: int = setting(
        "TOMORI_MAX_ATTACHMENT_CHARS",
        20_000,
        integer(0, unit="characters", maximum=1_000_000),
        "a text file attached is given to the model up to this many characters, then cut with "
        "a marker; 0 names text files without reading them",
    )
    image_bytes_in_flight: int = setting(
        "TOMORI_IMAGE_BYTES_IN_FLIGHT",
        100_000_000,
        integer(1, unit="bytes", maximum=100_000_000_000),
        "most bytes of images the turns of one process hold at once (a turn holds the images it "
        "read until it ends; its requests carry them base64-encoded, a third larger); an image "
        "that does not fit now is left out and the model told; at least TOMORI_MAX_IMAGE_BYTES, "
        "or larger images are never sent",
    )
    max_text_files: int = setting(
        "TOMORI_MAX_TEXT_FILES",
        10,
        integer(1, unit="files", maximum=1_000),
        "most text files one request carries, newest first, the trigger's own before history's; "
        "the model is told of those left out",
    )
    max_text_files_chars: int = setting(
        "TOMORI_MAX_TEXT_FILES_CHARS",
        100_000,
        integer(1, unit="characters", maximum=10_000_000),
        "most characters of text files one request carries in all, newest first: the file that "
        "reaches it is cut there with a marker, and the model is told of those left out after it",
    )
    attachment_cache_bytes: int = setting(
        "TOMORI_ATTACHMENT_CACHE_BYTES",
        64_000_000,
        integer(0, unit="bytes", maximum=10_000_000_000),
        "files read for a turn are kept in memory up to this many bytes in all (the one used "
        "least lately forgotten first), so the turns after it do not download them again; 0 "
        "downloads every file for every turn that shows it",
    )
    max_output_tokens: int | None = setting(
        "TOMORI_MAX_OUTPUT_TOKENS",
        None,
        integer(1, unit="tokens", maximum=1_000_000),
        "most tokens one model pass may write (unset: the provider's default), sent as "
        "openai's max_completion_tokens to api.openai.com and max_tokens to other servers, "
        "Gemini's max_output_tokens",
    )
    context_tokens: int | None = setting(
        "TOMORI_CONTEXT_TOKENS",
        None,
        integer(MIN_CONTEXT_TOKENS, unit="tokens", maximum=MAX_CONTEXT_TOKENS),
        "the context size (request and answer, in tokens) each model's request is fitted "
        "to, the oldest history going first, unless its TOMORI_MODELS entry says "
        "+context=N or its server named a smaller one; unset: 32768 for OpenAI's and "
        "Gemini's own APIs, 4096 for any other server (OPENAI_BASE_URL: Ollama's default, "
        "which silently drops the start of a longer request)",
    )
    temperature: float | None = setting(
        "TOMORI_TEMPERATURE",
        None,
        decimal(0, 2),
        "sampling temperature sent to every model (unset: the provider's default)",
    )
    user_cooldown_ms: int = setting(
        "TOMORI_USER_COOLDOWN_MS",
        0,
        COOLDOWN_MS,
        "least time between two turns one user starts in one server; 0 for none; a server's "
        "admins may lengthen it, never shorten it",
    )
    user_daily_tokens: int = setting(
        "TOMORI_USER_DAILY_TOKENS",
        0,
        DAILY_TOKENS,
        "most tokens one user may spend per UTC day in one server; 0 for no limit; a server's "
        "admins may lower it, never raise or lift it",
    )
    server_daily_tokens: int = setting(
        "TOMORI_SERVER_DAILY_TOKENS",
        0,
        DAILY_TOKENS,
        "most tokens all of one server's members may spend together per UTC day (direct "
        "messages count as one server); 0 for no limit",
    )
    max_takes: int = setting(
        "TOMORI_MAX_TAKES",
        10,
        integer(2, unit="takes", maximum=100),
        "most takes one answer keeps (its first and those Regenerate made): a press of "
        "Regenerate past them is refused and asks no model, while ◀ ▶ still show them (a "
        "server turns Regenerate off with /tomori swipes)",
    )
    max_bot_turns: int = setting(
        "TOMORI_MAX_BOT_TURNS",
        3,
        integer(1, unit="turns", maximum=1_000),
        "with TOMORI_REPLY_TO_BOTS=1: most turns in a row bots (or webhooks) may start in one "
        "channel before a human writes there; also the most personas another persona's answer "
        "may draw in there before a human writes",
    )
    model_probe_interval_ms: int = setting(
        "TOMORI_MODEL_PROBE_INTERVAL_MS",
        30_000,
        integer(0, maximum=DAY_MS),
        "a model that stalled or failed with a server error is skipped (turns start on the next "
        "model of the chain) until a probe, this long after, finds it answering again; one "
        "probe at a time across every process; 0 never skips a model",
    )
    token_usage_days: int = setting(
        "TOMORI_TOKEN_USAGE_DAYS",
        2,
        integer(2, unit="days", maximum=36_500),
        "how long the database keeps each turn's tokens (its token_usage table): the daily "
        "limits and /tomori status read one day back; keep them longer to bill from them",
    )
    memories: bool = setting(
        "TOMORI_MEMORIES",
        True,
        flag,
        "1: the model is offered remember and forget tools, and the memories found relevant "
        "are shown to it before each turn (docs/privacy.md); 0: neither, and none is kept",
    )
    memory_chars: int = setting(
        "TOMORI_MEMORY_CHARS",
        300,
        integer(20, unit="characters", maximum=4_000),
        "most characters one memory may hold: a longer remember fails for the model, saying so",
    )
    memories_per_scope: int = setting(
        "TOMORI_MEMORIES_PER_SCOPE",
        100,
        integer(1, unit="memories", maximum=10_000),
        "most memories one scope keeps (a member in a server, a server, a persona in a server, "
        "a direct message): a remember past it fails for the model until one is forgotten",
    )
    memories_per_turn: int = setting(
        "TOMORI_MEMORIES_PER_TURN",
        10,
        integer(0, unit="memories", maximum=100),
        "most memories shown to the model before a turn: those its message's words find, "
        "then the newest",
    )
    memory_days: int = setting(
        "TOMORI_MEMORY_DAYS",
        365,
        integer(0, unit="days", maximum=36_500),
        "how long a memory is kept after it was saved; 0 keeps it until someone forgets it",
    )
    summaries: bool = setting(
        "TOMORI_SUMMARIES",
        True,
        flag,
        "1: what falls out of a channel's history window is folded, in the background, into a "
        "short summary of that channel (a thread has its own) that later turns are shown "
        "before the history (docs/privacy.md); 0: none is written, kept or shown",
    )
    summary_model: str = setting(
        "TOMORI_SUMMARY_MODEL",
        "",
        summary_model,
        "provider:model that writes the channel summaries, served by a provider the chain "
        "uses (empty: the first model of the channel's chain)",
    )
    summary_tokens: int = setting(
        "TOMORI_SUMMARY_TOKENS",
        300,
        integer(50, unit="tokens", maximum=4_000),
        "most tokens a channel summary may be written in (the summarizing pass's answer); "
        "its tokens count as the bot's in the server's daily limit, never a member's",
    )
    metrics_addr: str | None = setting(
        "TOMORI_METRICS_ADDR",
        None,
        listen_address,
        "host:port on which the bot serves /metrics (Prometheus text: counts, latencies and "
        "queues, never message text nor a user, channel or server id), /healthz and /readyz "
        "(the gateway connected and the database answering); unset serves nothing (needs the "
        "metrics extra); 127.0.0.1 keeps it to this machine (docs/operations.md)",
    )

    def __post_init__(self) -> None:
        """Check every field as its variable would be checked: same parser, same bounds. A
        plain form of a value (`"edit"`, `[1, 2]`) is kept as what the parser makes of it."""
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
                if _plain_form(value, parsed):
                    object.__setattr__(self, variable.field, parsed)
                    continue
                reason = f"it must be {kind_of(parsed)}, as {variable.name} gives"
            raise ConfigError(
                f"Settings({variable.field}={variable.show(value)}) is not allowed: {reason}",
                reason,
            )

    @property
    def first_token_budget_s(self) -> float:
        """The wait for the first token, never shorter than the idle budget."""
        return seconds(max(self.stream_first_token_timeout_ms, self.stream_sdk_call_timeout_ms))

    @property
    def first_token_budget_source(self) -> str:
        """The variable `first_token_budget_s` comes from, as an operator should read it: the
        idle budget's, when it raises a shorter first-token wait."""
        if self.stream_first_token_timeout_ms >= self.stream_sdk_call_timeout_ms:
            return "STREAM_FIRST_TOKEN_TIMEOUT_MS"
        return (
            f"STREAM_SDK_CALL_TIMEOUT_MS, since STREAM_FIRST_TOKEN_TIMEOUT_MS="
            f"{self.stream_first_token_timeout_ms} is below it and never waits less"
        )

    @property
    def delivery_budget_s(self) -> float:
        """The wait for each send once the model has finished; never below the edit interval,
        which edit mode waits out before its last edit."""
        return seconds(max(self.delivery_timeout_ms, self.stream_edit_interval_ms))

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
        if DEPRECATED_MAX_MESSAGES in env:
            values.setdefault("max_answer_chars", _deprecated_max_messages(env))
        return cls(**values)  # type: ignore[arg-type]


def _deprecated_max_messages(env: Mapping[str, str]) -> int:
    """`TOMORI_MAX_MESSAGES_PER_ANSWER` as characters, with a warning to move to the new
    variable (which wins when both are set): the ceiling now counts what a user reads, so a
    burst of short paragraphs no longer spends it."""
    messages = integer(1, unit="messages", maximum=5_000)(
        DEPRECATED_MAX_MESSAGES, env[DEPRECATED_MAX_MESSAGES]
    )
    chars = messages * FULL_MESSAGE_CHARS
    log.warning(
        "%s is deprecated: set TOMORI_MAX_ANSWER_CHARS instead (read now as %d messages of %d "
        "characters: TOMORI_MAX_ANSWER_CHARS=%d)%s",
        DEPRECATED_MAX_MESSAGES,
        messages,
        FULL_MESSAGE_CHARS,
        chars,
        "; TOMORI_MAX_ANSWER_CHARS is set too and wins" if "TOMORI_MAX_ANSWER_CHARS" in env else "",
    )
    return chars


VARIABLES: tuple[Variable, ...] = tuple(_variable(declared) for declared in fields(Settings))
"""Every setting's variable, in the order `Settings` declares them."""


def seconds(milliseconds: int) -> float:
    """A duration setting in the seconds asyncio and `time` count in:
    `seconds(settings.queue_max_age_ms)`."""
    return milliseconds / 1000
