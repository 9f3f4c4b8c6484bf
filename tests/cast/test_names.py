"""The look-alike letters a name's skeleton reads as Latin ones, each held to its source.

`LOOK_ALIKE_LETTERS` names each letter by its Unicode name; here each is matched, by code
point, to its row of Unicode's confusables.txt (UTS #39), as that file writes it: the
character, the Latin letter it is confusable with. A letter whose name is mistyped, or whose
row says another letter, fails here. Small capitals are named after their letter, which is
checked by their names: every one Unicode has is read as its letter.
"""

from __future__ import annotations

import sys
import unicodedata

from tomori.cast.names import LOOK_ALIKE_LETTERS, passes_for_any, passes_for_the_bot, skeleton

CONFUSABLES = {
    # confusables.txt: the character's code point, the code point of its Latin prototype
    0x0430: 0x0061, 0x0435: 0x0065, 0x043E: 0x006F, 0x0440: 0x0070, 0x0441: 0x0063,
    0x0443: 0x0079, 0x0445: 0x0078, 0x0456: 0x0069, 0x0458: 0x006A, 0x0455: 0x0073,
    0x0501: 0x0064, 0x04CF: 0x0069, 0x041A: 0x004B, 0x041C: 0x004D, 0x0422: 0x0054,
    0x0412: 0x0042, 0x041D: 0x0048,
    0x03B1: 0x0061, 0x03BF: 0x006F, 0x03C1: 0x0070, 0x03A4: 0x0054, 0x03B9: 0x0069,
    0x039A: 0x004B, 0x03BD: 0x0076,
    0x13A0: 0x0044, 0x13A1: 0x0052, 0x13A2: 0x0054, 0x13A5: 0x0069, 0x13A9: 0x0059,
    0x13AA: 0x0041, 0x13AB: 0x004A, 0x13AC: 0x0045, 0x13B3: 0x0057, 0x13B7: 0x004D,
    0x13BB: 0x0048, 0x13BD: 0x0059, 0x13C0: 0x0047, 0x13C2: 0x0068, 0x13C3: 0x005A,
    0x13CF: 0x0062, 0x13D2: 0x0052, 0x13D4: 0x0057, 0x13D5: 0x0053, 0x13D9: 0x0056,
    0x13DA: 0x0053, 0x13DE: 0x004C, 0x13DF: 0x0043, 0x13E2: 0x0050, 0x13E6: 0x004B,
    0x13E7: 0x0064, 0x13F3: 0x0047, 0x13F4: 0x0042,
    0x0131: 0x0069, 0x0251: 0x0061, 0x028B: 0x0076, 0x0585: 0x006F, 0xA4D4: 0x0054,
    0x146F: 0x0064,
}  # fmt: skip


def _cited(letter: str) -> str | None:
    """The Latin letter confusables.txt says `letter` (or the capital that folds to it) is."""
    for source, prototype in CONFUSABLES.items():
        if chr(source).casefold() == letter:
            return chr(prototype).casefold()
    return None


def test_each_look_alike_is_the_latin_letter_its_source_says() -> None:
    for name, latin in LOOK_ALIKE_LETTERS:
        letter = unicodedata.lookup(name)
        assert unicodedata.name(letter) == name
        assert letter.casefold() == letter  # as a name is compared: case-folded
        if name.startswith("LATIN LETTER SMALL CAPITAL "):
            assert name.removeprefix("LATIN LETTER SMALL CAPITAL ") == latin.upper()
        else:
            assert _cited(letter) == latin, name
        assert skeleton(letter) == skeleton(latin)
    cited = {
        unicodedata.lookup(name)
        for name, _ in LOOK_ALIKE_LETTERS
        if not name.startswith("LATIN LETTER SMALL CAPITAL ")
    }
    assert {chr(source).casefold() for source in CONFUSABLES} == cited  # no row left unused


def test_every_small_capital_reads_as_its_letter() -> None:
    small_capitals = {
        chr(code): name.removeprefix("LATIN LETTER SMALL CAPITAL ")
        for code in range(sys.maxunicode + 1)
        if (name := unicodedata.name(chr(code), "")).startswith("LATIN LETTER SMALL CAPITAL ")
    }
    single = {c: letter for c, letter in small_capitals.items() if len(letter) == 1}
    assert len(single) == 25  # all but X, which Unicode lacks
    for capital, letter in single.items():
        assert skeleton(capital) == skeleton(letter), unicodedata.name(capital)


def test_cherokee_small_letters_read_as_their_capitals() -> None:
    assert skeleton("\uab72omori") == skeleton("\u13a2omori") == skeleton("tomori")


def test_letters_that_read_as_one_are_one() -> None:
    assert passes_for_the_bot("Tornori", "Tomori")  # rn for m
    assert passes_for_any("VVendy", ["wendy"])  # vv for w
    assert passes_for_any("Clave", ["dave"])  # cl for d
    assert not passes_for_any("Carl", ["dave", "wendy"])


def test_the_bots_name_with_bot_ish_words_around_it_is_the_bot() -> None:
    for name in (
        "Tomori Bot",
        "Tomori-bot",
        "Tomori (bot)",
        "Tomori APP",
        "TomoriBot",
        "The Real Tomori",
        "official tomori AI",
        "Tomori, the assistant",
        "\u13a2omori bot",
    ):
        assert passes_for_the_bot(name, "Tomori"), name
    for name in ("Tomoko Bot", "Tomori's friend", "Bot", "Robotomori"):
        assert not passes_for_the_bot(name, "Tomori"), name


def test_marks_symbols_and_digits_around_a_name_do_not_make_it_another() -> None:
    for name in ("Tomori!", "Tomori|", "Tomori | bot", "Tomori \u2122", "T0m0r1", "\ua4d4omori"):
        assert passes_for_the_bot(name, "Tomori"), name
    for name in ("dave!", "dave 1", "Dave|", "\u146fave", "d\u0251ve"):
        assert passes_for_any(name, ["dave"]), name
    assert not passes_for_any("Davina", ["dave"])
    assert not passes_for_the_bot("Tomoko", "Tomori")
