from __future__ import annotations

from pathlib import Path

import pytest

from tomori.config import ConfigError, Settings

INTEGER_VARIABLES = [
    "STREAM_FIRST_TOKEN_TIMEOUT_MS",
    "STREAM_SDK_CALL_TIMEOUT_MS",
    "STREAM_ABANDONED_SETTLE_TIMEOUT_MS",
    "CHANNEL_LOCK_TIMEOUT_MS",
    "TOMORI_QUEUE_MAX_AGE_MS",
]


def test_defaults_are_the_documented_ones() -> None:
    settings = Settings.from_env({})
    assert settings.stream_first_token_timeout_ms == 300_000
    assert settings.stream_sdk_call_timeout_ms == 120_000
    assert settings.stream_abandoned_settle_timeout_ms == 5_000
    assert settings.channel_lock_timeout_ms == 180_000
    assert settings.queue_max_age_ms == 600_000
    assert settings.db_path == Path("tomori.db")


def test_values_are_read_in_milliseconds() -> None:
    settings = Settings.from_env(
        {"STREAM_FIRST_TOKEN_TIMEOUT_MS": "250", "STREAM_SDK_CALL_TIMEOUT_MS": " 40 "}
    )
    assert settings.first_token_budget_s == 0.25
    assert settings.idle_budget_s == 0.04


def test_first_token_budget_is_never_below_the_idle_budget() -> None:
    settings = Settings.from_env(
        {"STREAM_FIRST_TOKEN_TIMEOUT_MS": "10", "STREAM_SDK_CALL_TIMEOUT_MS": "500"}
    )
    assert settings.first_token_budget_s == 0.5


@pytest.mark.parametrize("variable", INTEGER_VARIABLES)
@pytest.mark.parametrize("bad", ["abc", "-5", "1.5", "", "10ms"])
def test_a_bad_integer_names_the_variable_the_value_and_what_is_allowed(
    variable: str, bad: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({variable: bad})
    message = str(raised.value)
    assert variable in message
    assert repr(bad) in message
    assert "integer" in message


@pytest.mark.parametrize("variable", [v for v in INTEGER_VARIABLES if "SETTLE" not in v])
def test_zero_is_refused_where_a_positive_integer_is_required(variable: str) -> None:
    with pytest.raises(ConfigError, match=f"{variable}='0'.*positive integer"):
        Settings.from_env({variable: "0"})


def test_zero_disables_the_settle_wait() -> None:
    settings = Settings.from_env({"STREAM_ABANDONED_SETTLE_TIMEOUT_MS": "0"})
    assert settings.settle_budget_s == 0


def test_db_path_in_an_existing_folder_is_accepted(tmp_path: Path) -> None:
    settings = Settings.from_env({"TOMORI_DB_PATH": str(tmp_path / "bot.db")})
    assert settings.db_path == tmp_path / "bot.db"


@pytest.mark.parametrize(
    ("value", "why"),
    [("", "file path"), ("{tmp}", "folder"), ("{tmp}/missing/bot.db", "does not exist")],
)
def test_an_unusable_db_path_stops_start_up(tmp_path: Path, value: str, why: str) -> None:
    with pytest.raises(ConfigError, match=f"TOMORI_DB_PATH=.*{why}"):
        Settings.from_env({"TOMORI_DB_PATH": value.format(tmp=tmp_path)})
