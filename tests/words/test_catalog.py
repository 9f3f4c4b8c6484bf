"""Every language says every text, with the same placeholders, within what Discord shows.

Over every key of every catalog (tomori/words/*.toml) and every command, option and choice of
the slash command table (whose English is the table's own): a key missing in a language, a
placeholder one language names and another does not, a text longer than Discord's cap where
it is shown, or a number a translation drops fails here, naming the key.
"""

from __future__ import annotations

import re

import pytest

from tomori.commands import COMMANDS, localized
from tomori.delivery import notices
from tomori.monitoring import why
from tomori.monitoring.why_book import MAX_STEPS
from tomori.policy.limits import Limit
from tomori.policy.overrides import Source
from tomori.tools.confirmation import PressRefusal
from tomori.words import ENGLISH, LOCALES, Listed, catalog, chosen, said, say
from tomori.words.catalog import cap, placeholders

OTHERS = [locale for locale in LOCALES if locale != ENGLISH]
COMMAND_TEXTS = dict(localized.english())
"""The table's English by key: what the other languages must say of the commands."""
NAME = re.compile(r"^[-_a-z0-9]{1,32}$")
"""A command's or option's name as Discord takes it: lowercase, at most 32."""
NUMBER = re.compile(r"\d[\d,]*")
WHY_WITH_VALUES = {
    why.Fate.REFUSED,
    why.Fate.SKIPPED,
    why.Fate.TRIED,
    why.Fate.STOPPED,
    why.Fate.DELIVERED,
    why.Fate.UNDELIVERED,
}
"""The steps of a message's way that say a value (a limit, a model, a count, a kind)."""


def english(key: str) -> str:
    return catalog(ENGLISH).get(key) or COMMAND_TEXTS[key]


@pytest.mark.parametrize("locale", OTHERS)
def test_each_language_says_every_text_and_nothing_else(locale: str) -> None:
    wanted = set(catalog(ENGLISH)) | set(COMMAND_TEXTS)
    said_here = set(catalog(locale))
    missing = wanted - said_here
    # A choice's English name is its value; a language may leave it as it is.
    missing -= {key for key in missing if key.startswith("choice.")}
    assert not missing, f"{locale} lacks {sorted(missing)}"
    assert not said_here - wanted, f"{locale} says what nothing shows: {sorted(said_here - wanted)}"


@pytest.mark.parametrize("locale", LOCALES)
def test_every_text_names_the_placeholders_english_does_and_fits_where_it_is_shown(
    locale: str,
) -> None:
    for key, text in catalog(locale).items():
        assert placeholders(text) == placeholders(english(key)), f"{locale} {key}"
        assert text.strip(), f"{locale} {key} is empty"
        assert len(text) <= cap(key), f"{locale} {key}: {len(text)} > {cap(key)}"


@pytest.mark.parametrize("locale", OTHERS)
def test_a_translated_command_text_keeps_the_numbers_its_english_gives(locale: str) -> None:
    """A bound written into a description ("1 to 10", "2,000 characters") is said in every
    language: a table whose bound moves fails here until each language moves it too."""
    for key, text in COMMAND_TEXTS.items():
        translated = catalog(locale).get(key, text)
        for number in NUMBER.findall(text):
            assert number in translated, f"{locale} {key} drops {number}"


def test_the_tables_english_fits_discords_caps() -> None:
    for key, text in COMMAND_TEXTS.items():
        assert 1 <= len(text) <= cap(key), key
    for command in COMMANDS:
        assert all(NAME.match(part) for part in command.path), command.name
        assert all(NAME.match(option.name) for option in command.options), command.name


@pytest.mark.parametrize("locale", LOCALES)
def test_a_notice_said_with_its_longest_values_still_fits_an_embed(locale: str) -> None:
    """The notices whose values grow with the channel: forty members named, the rest
    counted; a fallback after many models; a provider's reason."""
    members = [str(10**18 + n) for n in range(notices.NAMED_AT_MOST + 10)]
    grown = (
        notices.cleared_by_kill(members),
        notices.fallback_used("provider:" + "m" * 60, ["provider:" + "m" * 60] * 10),
        notices.refused_by_provider("r" * 500),
    )
    for notice in grown:
        shown = notice.in_locale(locale)
        assert len(shown.title) <= 256
        assert len(shown.description) <= 4_096


@pytest.mark.parametrize("locale", LOCALES)
def test_a_why_account_of_the_most_steps_with_the_longest_words_still_fits_an_embed(
    locale: str,
) -> None:
    """ "Why no answer?" at its longest: as many steps as a message keeps, each the longest a
    step says in this language (a model's label longer than an account shows, every outcome,
    limit, stop and failed delivery), and that no model answered; and every reason a message
    was not for the bot."""
    assert set(why.LIMITS) == {limit.value for limit in Limit}  # each limit has its words
    label = "provider:" + "m" * 2 * why.SHOWN_LABEL_CHARS
    failed = why.Step(why.Fate.TRIED, label, why.ModelOutcome.FAILED)
    steps = [
        *(why.Step(fate) for fate in set(why.Fate) - WHY_WITH_VALUES),
        *(why.Step(why.Fate.REFUSED, limit, until=4_102_444_800.5) for limit in why.LIMITS),
        why.Step(why.Fate.SKIPPED, label),
        *(why.Step(why.Fate.TRIED, label, outcome) for outcome in why.ModelOutcome),
        *(why.Step(why.Fate.STOPPED, outcome=stop) for stop in why.StoppedBy),
        why.Step(why.Fate.DELIVERED, count=10**6),
        *(why.Step(why.Fate.UNDELIVERED, outcome=lost) for lost in why.Undelivered),
    ]
    longest = max(steps, key=lambda step: len(say(why.step_words(step), locale)))
    for account in (
        why.told([longest] * MAX_STEPS),
        why.told([*[longest] * (MAX_STEPS - 1), failed]),
    ):
        shown = account.in_locale(locale)
        assert len(shown.title) <= 256
        assert len(shown.description) <= 4_096, len(shown.description)
    for reason in why.Unaddressed:  # each reason the reply rule gives has its words
        assert len(why.unaddressed(reason).in_locale(locale).description) <= 4_096


def test_where_a_value_came_from_reads_in_english_as_tomori_show_names_it() -> None:
    """`/tomori limits` says its sources from the catalog; `/tomori show` (English) by their
    `Source`: the two read alike."""
    for source in Source:
        assert say(said(f"source.{source.name.lower()}")) == source.value


def test_english_is_as_readers_know_it_and_japanese_says_it_in_japanese() -> None:
    assert notices.KILL_STOPPED.description == (
        "Stopped the active response stream (if any) and cleared queued responses in this channel."
    )
    japanese = notices.KILL_STOPPED.in_locale("ja")
    assert (japanese.title, japanese.colour) == ("応答を停止しました", notices.KILL_STOPPED.colour)
    assert say(PressRefusal.NOT_WAITING.words, "ja") == "この呼び出しは、もう回答を待っていません。"
    assert say(said("scene.begins", cast=Listed(("A", "B", "C")), cycles="2")) == (
        "The scene of A, B and C (2) begins. /kill stops it."
    )
    assert say(said("scene.begins", cast=Listed(("A", "B", "C")), cycles="2"), "ja").startswith(
        "A、BとCのシーン"
    )


def test_words_said_with_other_values_than_their_text_names_are_refused_where_chosen() -> None:
    with pytest.raises(KeyError):
        said("notice.cooldown")
    with pytest.raises(KeyError):
        said("notice.cooldown", at=1, extra="x")
    with pytest.raises(KeyError):
        said("notice.no_such_text")


@pytest.mark.parametrize(
    ("wanted", "language"),
    [
        (("ja", "en-US"), "ja"),
        (("en-GB", "ja"), "en"),
        (("fr", "ja"), "ja"),
        (("fr", None), "en"),
        ((None, None), "en"),
        (("zh-TW", "es-ES"), "en"),
    ],
)
def test_a_reader_gets_the_interactions_language_then_the_servers_then_english(
    wanted: tuple[str | None, str | None], language: str
) -> None:
    assert chosen(*wanted) == language
