"""The settings and model chain the cog tests start a bot with: short budgets, the local model."""

from __future__ import annotations

from pathlib import Path

from tests.support.llm_server import LLMServer
from tomori.config.models import ModelChain
from tomori.config.settings import Settings, ShowProgress

SHORT_BUDGETS: dict[str, object] = {
    "stream_first_token_timeout_ms": 2_000,
    "stream_sdk_call_timeout_ms": 2_000,
    "stream_abandoned_settle_timeout_ms": 100,
    "typing_keepalive_interval_ms": 50,
    "follow_ups": False,
    "progress": ShowProgress.OFF,
    "summaries": False,
}
"""Budgets short enough for a test, and follow-ups off unless a test turns them on (most tests
send one user's messages in a row to watch the queue, which a follow-up would cut short);
progress reactions off likewise (most tests count the requests a turn makes), and channel
summaries too (their background requests would take replies scripted for turns); merge them
into any database's settings."""


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
