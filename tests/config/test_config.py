from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.paths import REPO
from tomori.config.database_url import masked_url
from tomori.config.settings import (
    VARIABLES,
    ConfigError,
    Delivery,
    IntegerParser,
    KillPolicy,
    Settings,
    Variable,
    seconds,
)
from tomori_cog.variables import unread_variables

INTEGER_VARIABLES = [
    "STREAM_FIRST_TOKEN_TIMEOUT_MS",
    "STREAM_SDK_CALL_TIMEOUT_MS",
    "STREAM_ABANDONED_SETTLE_TIMEOUT_MS",
    "CHANNEL_LOCK_TIMEOUT_MS",
    "TOMORI_QUEUE_MAX_AGE_MS",
    "DISCORD_TYPING_KEEPALIVE_INTERVAL_MS",
    "STREAM_EDIT_INTERVAL_MS",
    "TOMORI_HISTORY_LIMIT",
    "TOOL_EXECUTION_TIMEOUT_MS",
    "BOT_MAX_FUNCTION_CALL_ITERATIONS",
    "BOT_MAX_CONSECUTIVE_TOOL_ERRORS",
]


def test_defaults_are_the_documented_ones() -> None:
    settings = Settings.from_env({})
    assert settings.stream_first_token_timeout_ms == 300_000
    assert settings.stream_sdk_call_timeout_ms == 120_000
    assert settings.stream_abandoned_settle_timeout_ms == 5_000
    assert settings.channel_lock_timeout_ms == 180_000
    assert settings.queue_max_age_ms == 600_000
    assert settings.typing_keepalive_interval_ms == 8_000
    assert settings.stream_edit_interval_ms == 1_000
    assert settings.history_limit == 20
    assert settings.tool_execution_timeout_ms == 300_000
    assert settings.max_function_call_iterations == 100
    assert settings.max_consecutive_tool_errors == 5
    assert settings.db_path == Path("tomori.db")
    assert settings.delivery is Delivery.MESSAGES
    assert settings.kill_policy is KillPolicy.REQUESTER
    assert settings.channels == frozenset()
    assert settings.reply_to_bots is False
    assert settings.max_answer_chars == 19_500


def test_the_former_message_ceiling_is_read_as_characters_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="tomori.config.settings"):
        settings = Settings.from_env({"TOMORI_MAX_MESSAGES_PER_ANSWER": "4"})
    assert settings.max_answer_chars == 4 * 1950
    assert caplog.messages == [
        "TOMORI_MAX_MESSAGES_PER_ANSWER is deprecated: set TOMORI_MAX_ANSWER_CHARS instead "
        "(read now as 4 messages of 1950 characters: TOMORI_MAX_ANSWER_CHARS=7800)"
    ]


def test_the_former_message_ceiling_is_not_called_a_variable_nothing_reads() -> None:
    """It is read (as characters), so the misspelling check must not say nothing reads it."""
    assert unread_variables({"TOMORI_MAX_MESSAGES_PER_ANSWER": "4"}) == []


def test_the_new_answer_ceiling_wins_over_the_former_one(caplog: pytest.LogCaptureFixture) -> None:
    environ = {"TOMORI_MAX_MESSAGES_PER_ANSWER": "4", "TOMORI_MAX_ANSWER_CHARS": "12000"}
    with caplog.at_level("WARNING", logger="tomori.config.settings"):
        assert Settings.from_env(environ).max_answer_chars == 12_000
    assert "TOMORI_MAX_ANSWER_CHARS is set too and wins" in caplog.text


def test_a_bad_former_message_ceiling_stops_start_up_naming_it() -> None:
    with pytest.raises(ConfigError, match="TOMORI_MAX_MESSAGES_PER_ANSWER"):
        Settings.from_env({"TOMORI_MAX_MESSAGES_PER_ANSWER": "ten"})


def test_values_are_read_in_milliseconds() -> None:
    settings = Settings.from_env(
        {"STREAM_FIRST_TOKEN_TIMEOUT_MS": "250", "STREAM_SDK_CALL_TIMEOUT_MS": " 40 "}
    )
    assert settings.first_token_budget_s == 0.25
    assert seconds(settings.stream_sdk_call_timeout_ms) == 0.04


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
    assert seconds(settings.stream_abandoned_settle_timeout_ms) == 0


def test_db_path_in_an_existing_folder_is_accepted(tmp_path: Path) -> None:
    settings = Settings.from_env({"TOMORI_DB_PATH": str(tmp_path / "bot.db")})
    assert settings.db_path == tmp_path / "bot.db"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "file path"),
        ("{tmp}", "folder"),
        ("{tmp}/missing/bot.db", "does not exist"),
        ("~no-such-user-here/bot.db", "home folder"),
    ],
)
def test_an_unusable_db_path_stops_start_up(tmp_path: Path, value: str, why: str) -> None:
    with pytest.raises(ConfigError, match=f"TOMORI_DB_PATH=.*{why}"):
        Settings.from_env({"TOMORI_DB_PATH": value.format(tmp=tmp_path)})


def test_the_other_variables_are_read() -> None:
    settings = Settings.from_env(
        {
            "TOMORI_STREAM_DELIVERY": "Edit",
            "TOMORI_KILL_POLICY": "anyone",
            "TOMORI_CHANNELS": "123, 456,",
            "TOMORI_REPLY_TO_BOTS": "1",
            "TOMORI_SYSTEM_PROMPT": "Be a pirate.",
        }
    )
    assert settings.delivery is Delivery.EDIT
    assert settings.kill_policy is KillPolicy.ANYONE
    assert settings.channels == {123, 456}
    assert settings.reply_to_bots is True
    assert settings.system_prompt == "Be a pirate."


@pytest.mark.parametrize(
    ("variable", "bad", "allowed"),
    [
        ("TOMORI_STREAM_DELIVERY", "stream", "one of messages, edit"),
        ("TOMORI_KILL_POLICY", "admins", "one of anyone, requester"),
        ("TOMORI_CHANNELS", "123,general", "channel IDs"),
        ("TOMORI_REPLY_TO_BOTS", "yes", "it must be 1 or 0 (or true/false)"),
        ("TOMORI_SYSTEM_PROMPT", "  ", "some text"),
    ],
)
def test_a_bad_choice_names_the_variable_the_value_and_what_is_allowed(
    variable: str, bad: str, allowed: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({variable: bad})
    assert str(raised.value).startswith(f"{variable}={bad!r} is not allowed")
    assert allowed in str(raised.value)


def test_every_variable_has_a_documented_default_and_fills_a_setting() -> None:
    names = [variable.name for variable in VARIABLES]
    assert len(names) == len(set(names))
    for variable in VARIABLES:
        assert variable.help
        assert variable.default


def test_the_configuration_page_documents_every_variable() -> None:

    from tomori.config.models import MODEL_VARIABLES
    from tomori_cog.variables import BOT_VARIABLES

    page = (REPO / "docs" / "configuration.md").read_text()
    rows = [*BOT_VARIABLES, *MODEL_VARIABLES]
    for name in [v.name for v in VARIABLES] + [name for name, _, _ in rows]:
        assert f"| `{name}` |" in page, name


DIGIT_LIKE = ["²", "①", "\u0663", "\uff13", "1²", "\U0001d7d7"]
"""Superscript two, circled one, Arabic-Indic three, fullwidth three, bold nine."""


@pytest.mark.parametrize("variable", INTEGER_VARIABLES)
@pytest.mark.parametrize("bad", [*DIGIT_LIKE, "9" * 400, "9" * 5_000])
def test_a_digit_like_or_endless_number_is_refused_naming_the_variable(
    variable: str, bad: str
) -> None:
    with pytest.raises(ConfigError, match=f"^{variable}=.* is not allowed: it must be"):
        Settings.from_env({variable: bad})


@pytest.mark.parametrize("bad", [*DIGIT_LIKE, "9" * 400, "0", str(2**64)])
def test_a_channel_id_must_be_a_discord_id(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"^TOMORI_CHANNELS=.*channel IDs"):
        Settings.from_env({"TOMORI_CHANNELS": f"123,{bad}"})


@pytest.mark.parametrize(
    ("variable", "ceiling"),
    [
        ("STREAM_SDK_CALL_TIMEOUT_MS", 86_400_000),
        ("STREAM_ABANDONED_SETTLE_TIMEOUT_MS", 3_600_000),
        ("CHANNEL_LOCK_TIMEOUT_MS", 604_800_000),
        ("TOMORI_QUEUE_MAX_AGE_MS", 604_800_000),
        ("TOMORI_HISTORY_LIMIT", 1_000),
        ("BOT_MAX_FUNCTION_CALL_ITERATIONS", 1_000),
    ],
)
def test_each_number_has_a_documented_ceiling(variable: str, ceiling: int) -> None:
    assert Settings.from_env({variable: str(ceiling)})
    with pytest.raises(ConfigError, match=f"up to {ceiling} "):
        Settings.from_env({variable: str(ceiling + 1)})


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("history_limit", 0, "positive integer up to 1000"),
        ("stream_sdk_call_timeout_ms", 10**400, "up to 86400000"),
        pytest.param("stream_sdk_call_timeout_ms", 10**5_000, "up to 86400000", id="5000-digits"),
        ("queue_max_age_ms", True, "must be an int,"),
        ("channels", frozenset({"123"}), "frozenset of int"),
        ("channels", frozenset({0}), "channel IDs"),
        ("delivery", "fast", "one of messages, edit"),
        ("delivery", 1, "one of messages, edit"),
        ("channels", [0], "channel IDs"),
        ("channels", ["123"], "frozenset of int"),
        ("temperature", True, "must be a float,"),
        ("system_prompt", " ", "some text"),
    ],
)
def test_settings_built_in_code_are_checked_naming_the_field(
    field: str, value: object, why: str
) -> None:
    with pytest.raises(ConfigError, match=f"^Settings\\({field}=.*{why}"):
        Settings(**{field: value})  # type: ignore[arg-type]


ANY_VALUE = (
    st.text(max_size=40)
    | st.from_regex(r"\s*\d+\s*")
    | st.builds(str.__mul__, st.sampled_from("9x/\0,"), st.integers(0, 5_000))
)


@settings(max_examples=300, deadline=None)
@given(variable=st.sampled_from(VARIABLES), raw=ANY_VALUE)
def test_any_value_of_any_variable_is_read_in_bounds_or_refused_naming_it(
    variable: Variable, raw: str
) -> None:
    refusal: ConfigError | None = None
    try:
        built = Settings.from_env({variable.name: raw})
    except ConfigError as error:
        refusal = error
    if refusal is not None:
        written = masked_url(raw) if variable.secret else raw
        assert str(refusal).startswith(f"{variable.name}={written!r} is not allowed: ")
        assert "\n" not in str(refusal).replace(repr(written), "")
        return
    value = getattr(built, variable.field)
    if value is None:  # an optional variable set empty is unset
        assert variable.optional
        assert not raw.strip()
        return
    if isinstance(variable.parser, IntegerParser):
        assert variable.parser.minimum <= value <= variable.parser.maximum
    assert Settings(**{variable.field: value}) == built


@pytest.mark.parametrize(
    ("written", "value"),
    [(".5", 0.5), ("0.5", 0.5), ("1.", 1.0), ("2", 2.0), (" .25 ", 0.25), ("0", 0.0)],
)
def test_a_decimal_is_read_however_it_is_usually_written(written: str, value: float) -> None:
    assert Settings.from_env({"TOMORI_TEMPERATURE": written}).temperature == value


@pytest.mark.parametrize("written", [".", "..5", "-0.5", "1e0", "2.5", ".5.", "nan", "0x1"])
def test_what_is_no_decimal_in_bounds_is_still_refused(written: str) -> None:
    with pytest.raises(ConfigError, match=r"^TOMORI_TEMPERATURE=.* must be a decimal number"):
        Settings.from_env({"TOMORI_TEMPERATURE": written})


@settings(max_examples=200, deadline=None)
@given(st.decimals(min_value=0, max_value=2, places=3))
def test_every_decimal_in_bounds_is_read_with_or_without_its_leading_zero(number: object) -> None:
    written = str(number)
    short = written.removeprefix("0") if written.startswith("0.") else written
    for text in (written, short):
        assert Settings.from_env({"TOMORI_TEMPERATURE": text}).temperature == float(written)


@pytest.mark.parametrize(
    ("field", "plain", "typed"),
    [
        ("delivery", "edit", Delivery.EDIT),
        ("kill_policy", "Requester", KillPolicy.REQUESTER),
        ("channels", [1, 2], frozenset({1, 2})),
        ("channels", (3,), frozenset({3})),
        ("channels", [], frozenset()),
        ("tools", ["current_time"], frozenset({"current_time"})),
        ("db_path", "tomori.db", Path("tomori.db")),
        ("temperature", 1, 1.0),
    ],
)
def test_settings_in_code_take_the_plain_forms_the_readme_invites(
    field: str, plain: object, typed: object
) -> None:
    built = Settings(**{field: plain})  # type: ignore[arg-type]
    assert getattr(built, field) == typed
    assert type(getattr(built, field)) is type(typed)
    assert built == Settings(**{field: typed})  # type: ignore[arg-type]
