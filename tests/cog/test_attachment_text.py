"""A text file cut at its read bound: the model gets exactly its first characters, and a
marker exactly when there was more, whatever the characters' sizes in UTF-8."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tomori_cog.reading.attachments import BYTES_PER_CHAR, decoded, text_section


@given(st.text(), st.integers(min_value=1, max_value=64))
def test_a_file_read_up_to_its_bound_shows_its_first_characters_and_says_when_cut(
    text: str, limit: int
) -> None:
    data = text.encode()
    bound = limit * BYTES_PER_CHAR
    cut = len(data) > bound
    section = text_section("notes.txt", decoded(data[:bound], cut=cut), cut=cut, limit=limit)
    marker = (
        f"\n[... notes.txt is cut here: only its first {limit} characters are shown]"
        if len(text) > limit
        else ""
    )
    assert section == f"[file notes.txt]\n{text[:limit]}{marker}\n[end of notes.txt]"
