"""The settings and model chain the cog tests start a bot with: short budgets, the local model;
and, for a test whose subject is not Discord's pace, a quicker one."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from tests.support.llm_server import LLMServer
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.delivery.budget import CHANNEL_WRITES, ChannelPace
from tomori_cog import pacing

SHORT_BUDGETS: dict[str, object] = {
    "stream_first_token_timeout_ms": 2_000,
    "stream_sdk_call_timeout_ms": 2_000,
    "stream_abandoned_settle_timeout_ms": 100,
    "typing_keepalive_interval_ms": 50,
    "follow_ups": False,
}
"""Budgets short enough for a test, and follow-ups off unless a test turns them on (most tests
send one user's messages in a row to watch the queue, which a follow-up would cut short);
merge them into any database's settings."""


def settings_for(tmp_path: Path, **overrides: object) -> Settings:
    """Settings on a database in `tmp_path`, with `SHORT_BUDGETS`."""
    values: dict[str, object] = {"db_path": tmp_path / "tomori.db", **SHORT_BUDGETS}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def chain_for(
    server: LLMServer, models: str = "openai:test-model", allowed: str = ""
) -> ModelChain:
    """`models` (one openai model unless told), each provider served by the local LLM server;
    `allowed` is `TOMORI_ALLOWED_MODELS` (unset: admins may choose only `models`)."""
    return ModelChain.from_env(
        {
            "TOMORI_MODELS": models,
            "TOMORI_ALLOWED_MODELS": allowed,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": f"{server.base_url}/v1",
            "GEMINI_API_KEY": "gemini-test-key",
            "GEMINI_BASE_URL": server.base_url,
        }
    )


class Patcher(Protocol):
    """What sets an attribute for a test: pytest's `monkeypatch` (undone after it), or a plain
    setter in a bot process of its own."""

    def setattr(self, target: Any, name: str, value: Any) -> None: ...


def quicken_channel_pace(window_s: float, patch: Patcher) -> None:
    """Have the cog pace each channel's writes by `window_s` instead of Discord's window
    (webhooks keep theirs): for a test whose subject is not the pace (a turn at a time, what
    traffic leaves behind) and that must not wait out Discord's buckets."""

    def channel_pace(limit: int = CHANNEL_WRITES, *args: Any, **kwargs: Any) -> ChannelPace:
        if not args and not kwargs:
            return ChannelPace(limit, window_s)
        return ChannelPace(limit, *args, **kwargs)

    patch.setattr(pacing, "ChannelPace", channel_pace)
