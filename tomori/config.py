"""Settings read from the environment, checked once at start-up.

The variable names and defaults are a public contract (BEHAVIOR.md): bot authors set them. A bad
value must stop start-up with a message naming the variable, the value and what is allowed,
rather than silently falling back to a default the author did not choose.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


class ConfigError(ValueError):
    """A setting has a value the bot cannot run with; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Every tunable of tomori-cog, in milliseconds where it is a duration."""

    stream_first_token_timeout_ms: int = 300_000
    stream_sdk_call_timeout_ms: int = 120_000
    stream_abandoned_settle_timeout_ms: int = 5_000
    channel_lock_timeout_ms: int = 180_000
    queue_max_age_ms: int = 600_000
    db_path: Path = Path("tomori.db")

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

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every variable; raise `ConfigError` on the first bad one."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for field_name, spec in _INTEGER_VARIABLES.items():
            raw = env.get(spec.variable)
            if raw is not None:
                values[field_name] = spec.parse(raw)
        raw_path = env.get("TOMORI_DB_PATH")
        if raw_path is not None:
            values["db_path"] = _parse_db_path(raw_path)
        return cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class _IntegerVariable:
    variable: str
    minimum: int

    def parse(self, raw: str) -> int:
        text = raw.strip()
        try:
            value = int(text, 10)
        except ValueError:
            value = None
        if value is None or value < self.minimum:
            allowed = "a positive integer" if self.minimum == 1 else "a non-negative integer"
            raise ConfigError(
                f"{self.variable}={raw!r} is not allowed: it must be {allowed} "
                f"(milliseconds{', 0 disables' if self.minimum == 0 else ''})"
            )
        return value


_INTEGER_VARIABLES: dict[str, _IntegerVariable] = {
    "stream_first_token_timeout_ms": _IntegerVariable("STREAM_FIRST_TOKEN_TIMEOUT_MS", 1),
    "stream_sdk_call_timeout_ms": _IntegerVariable("STREAM_SDK_CALL_TIMEOUT_MS", 1),
    "stream_abandoned_settle_timeout_ms": _IntegerVariable("STREAM_ABANDONED_SETTLE_TIMEOUT_MS", 0),
    "channel_lock_timeout_ms": _IntegerVariable("CHANNEL_LOCK_TIMEOUT_MS", 1),
    "queue_max_age_ms": _IntegerVariable("TOMORI_QUEUE_MAX_AGE_MS", 1),
}


def _parse_db_path(raw: str) -> Path:
    """Accept a file path whose folder exists; refuse what SQLite could never open."""
    if not raw.strip():
        raise ConfigError("TOMORI_DB_PATH='' is not allowed: it must be a file path")
    path = Path(raw).expanduser()
    if path.is_dir():
        raise ConfigError(f"TOMORI_DB_PATH={raw!r} is not allowed: it is a folder, not a file")
    if not path.parent.is_dir():
        raise ConfigError(
            f"TOMORI_DB_PATH={raw!r} is not allowed: its folder {str(path.parent)!r} does not exist"
        )
    return path
