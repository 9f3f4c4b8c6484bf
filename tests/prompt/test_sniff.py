"""What bytes are, by the bytes alone: an image's type by its signature, and text or not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tomori.prompt.sniff import image_type, is_text

SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


@given(st.sampled_from(sorted(SIGNATURES)), st.binary(max_size=64))
def test_an_image_is_the_type_its_signature_says(signature: bytes, rest: bytes) -> None:
    assert image_type(signature + rest) == SIGNATURES[signature]


@given(st.binary(min_size=4, max_size=4), st.binary(max_size=64))
def test_a_webp_is_riff_then_webp(size: bytes, rest: bytes) -> None:
    assert image_type(b"RIFF" + size + b"WEBP" + rest) == "image/webp"


@given(st.binary(max_size=64))
def test_bytes_with_no_signature_are_no_image(data: bytes) -> None:
    if not data.startswith((b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF")):
        assert image_type(data) is None


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00")), st.integers(0, 3))
def test_any_text_without_nul_is_text_even_cut_inside_a_character(text: str, cut: int) -> None:
    data = text.encode()
    assert is_text(data, cut=False)
    assert is_text(data[: len(data) - cut], cut=True)  # only the start was read


@given(st.binary(), st.binary())
def test_bytes_holding_a_nul_are_never_text(before: bytes, after: bytes) -> None:
    assert not is_text(before + b"\x00" + after, cut=False)


def test_bytes_mostly_not_utf8_are_not_text() -> None:
    assert not is_text(bytes(range(128, 256)), cut=False)
    assert is_text("a naïve café, and a few bad bytes pass".encode("latin-1"), cut=False)


def test_a_file_that_holds_replacement_characters_is_still_text() -> None:
    # Hypothesis found it: U+FFFD written in a file is valid UTF-8, not a byte that failed.
    assert is_text("\ufffd".encode() * 3, cut=False)
    assert not is_text(b"\xff" * 3, cut=False)
