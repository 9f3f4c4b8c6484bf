"""The stop word and follow-up rules, as plain functions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tomori.config.settings import ConfigError, Settings
from tomori.policy.interruptions import follow_up_key, is_stop_word

WORDS = frozenset({"stop", "cancel"})


@pytest.mark.parametrize("said", ["stop", "Stop!", "  STOP. ", "<@123> stop", "<@!123> cancel?"])
def test_a_stop_word_alone_stops_whatever_its_case_mention_or_punctuation(said: str) -> None:
    assert is_stop_word(said, WORDS)


@pytest.mark.parametrize("said", ["stop that", "don't stop", "stopping", "", "<@123>"])
def test_a_message_that_merely_holds_a_stop_word_does_not(said: str) -> None:
    assert not is_stop_word(said, WORDS)


def test_no_stop_words_means_no_stop() -> None:
    assert not is_stop_word("stop", frozenset())


def test_stop_words_are_read_as_short_single_words() -> None:
    assert Settings.from_env({"TOMORI_STOP_WORDS": " Halt , stop "}).stop_words == {"halt", "stop"}
    assert Settings.from_env({"TOMORI_STOP_WORDS": ""}).stop_words == frozenset()
    with pytest.raises(ConfigError, match="TOMORI_STOP_WORDS"):
        Settings.from_env({"TOMORI_STOP_WORDS": "stop right there"})
    with pytest.raises(ConfigError, match="TOMORI_STOP_WORDS"):
        Settings.from_env({"TOMORI_STOP_WORDS": "stop, !!"})  # no word in it


@given(st.text(st.characters(categories=("L", "N"), include_characters=".!?,;:'-#@ "), max_size=30))
def test_a_stop_word_the_settings_accept_stops_when_sent_as_written(raw: str) -> None:
    """An admin writes `TOMORI_STOP_WORDS=Stop!` and then sends "Stop!": it must stop."""
    try:
        words = Settings.from_env({"TOMORI_STOP_WORDS": raw}).stop_words
    except ConfigError:
        return
    for written in raw.split(","):
        if written.strip():
            assert is_stop_word(written, words)


def test_a_follow_up_is_addressed_to_the_bot_or_to_the_same_personas() -> None:
    assert follow_up_key(()) == "bot"
    assert follow_up_key(("luna", "sol")) == "personas:luna,sol"
    assert follow_up_key(("luna",)) != follow_up_key(())
