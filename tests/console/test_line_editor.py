"""The console's line editor: keys to a draft and messages, however a terminal's reads cut them."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from tomori.console.terminal import (
    PASTE_END,
    PASTE_START,
    Edit,
    Ended,
    Erased,
    LineEditor,
    Sent,
    Typed,
)

TYPED = [*"ab c\t\\`", "\r", "\n", "\x7f", "\x15", "\x17", "\x1b", "[", "A", "é", "語"]
SEQUENCES = [PASTE_START, PASTE_END, "\x1b[A", "\x1bOB"]
KEY = st.sampled_from(TYPED) | st.sampled_from(SEQUENCES)
KEYS = st.lists(KEY, max_size=40).map("".join)


def sent(edits: list[Edit]) -> list[str]:
    return [edit.text for edit in edits if isinstance(edit, Sent)]


@given(st.lists(st.text(max_size=6) | KEYS, max_size=6))
def test_how_reads_cut_the_keys_changes_nothing(pieces: list[str]) -> None:
    """A terminal hands over keys in reads of any size; between reads coming at once (no
    `commit`), the draft and what is sent are those of one read."""
    whole, cut = LineEditor(), LineEditor()
    at_once = whole.feed("".join(pieces))
    one_by_one = [edit for piece in pieces for edit in cut.feed(piece)]
    assert whole.draft == cut.draft
    assert whole.enter_pending == cut.enter_pending
    assert sent(at_once) == sent(one_by_one)
    assert "".join(e.text for e in at_once if isinstance(e, Typed)) == "".join(
        e.text for e in one_by_one if isinstance(e, Typed)
    )


@given(st.text(st.characters(blacklist_characters="\x1b"), min_size=1))
def test_a_bracketed_paste_then_enter_is_one_message_as_pasted(pasted: str) -> None:
    editor = LineEditor()
    edits = editor.feed(f"{PASTE_START}{pasted}{PASTE_END}") + editor.feed("\r")
    edits += editor.commit()
    expected = pasted.replace("\r\n", "\n").replace("\r", "\n")
    if "```" in expected or expected.endswith("\\"):
        return  # a draft that goes on: Enter is a line break (below)
    assert sent(edits) == [expected]
    assert editor.draft == ""


def test_ctrl_c_in_the_middle_of_a_paste_ends_it_and_keys_are_keys_again() -> None:
    editor = LineEditor()
    editor.feed(f"{PASTE_START}pasted\rmore")  # the end marker never comes
    editor.clear()
    assert editor.draft == ""
    assert editor.feed("/exit\r") == [Typed("/exit")]  # Enter ends the line again
    assert editor.commit() == [Sent("/exit")]
    assert editor.feed("\x04") == [Ended()]  # and Ctrl+D at an empty prompt ends input


def test_an_unmarked_paste_is_one_message_only_its_last_enter_sends() -> None:
    editor = LineEditor()
    edits = editor.feed("Traceback:\r  File x\r    raise\rValueError\r")
    assert sent(edits) == []
    assert editor.draft == "Traceback:\n  File x\n    raise\nValueError"
    assert editor.commit() == [Sent("Traceback:\n  File x\n    raise\nValueError")]


def test_an_enter_more_keys_follow_quickly_is_a_line_break() -> None:
    editor = LineEditor()
    assert editor.feed("one\r") == [Typed("one")]
    assert editor.enter_pending
    assert editor.feed("two\r") == [Typed("\ntwo")]
    assert editor.commit() == [Sent("one\ntwo")]


def test_an_open_fence_and_a_backslash_go_on_to_the_next_line() -> None:
    editor = LineEditor()
    editor.feed("```py\r")
    assert editor.commit() == [Typed("\n")]
    editor.feed("x = 1\r")
    editor.commit()
    editor.feed("```\r")
    assert sent(editor.commit()) == ["```py\nx = 1\n```"]
    editor.feed("a \\\r")
    editor.commit()
    editor.feed("b\r")
    assert sent(editor.commit()) == ["a \nb"]


def test_erasing_keys_and_ctrl_d() -> None:
    editor = LineEditor()
    editor.feed("first line\x1b[200~\rsecond wrd\x1b[201~\x17\x7fword")
    assert editor.draft == "first line\nsecondword"
    editor.feed("\x15")
    assert editor.draft == "first line\n"
    assert editor.feed("\x04") == []  # not empty: Ctrl+D does nothing
    editor.clear()
    assert editor.feed("\x1b[D\x1bOA\x04") == [Ended()]


def test_up_and_down_bring_back_the_messages_sent_then_the_draft() -> None:
    editor = LineEditor()
    for message in ("first", "second", "second"):
        editor.feed(f"{message}\r")
        editor.commit()
    editor.feed("half typ")
    editor.feed("\x1b[A")
    assert editor.draft == "second"  # sent twice in a row, remembered once
    editor.feed("\x1b[A\x1b[A")
    assert editor.draft == "first"
    assert editor.feed("\x1bOB") == [Erased("first", ""), Typed("second")]
    editor.feed("\x1b[B")
    assert editor.draft == "half typ"
    editor.feed("\x1b[A!\r")
    assert editor.commit() == [Sent("second!")]


@given(KEYS)
def test_each_edit_says_the_draft_it_leaves(keys: str) -> None:
    """What the terminal shows is built from the edits alone, as the session shows them."""
    editor = LineEditor()
    shown = ""
    for edit in editor.feed(keys) + editor.commit():
        if isinstance(edit, Typed):
            shown += edit.text
        elif isinstance(edit, Erased):
            assert shown.endswith(edit.text)
            shown = shown[: len(shown) - len(edit.text)]
            assert shown == edit.draft
        elif isinstance(edit, Sent):
            assert shown == edit.text
            shown = ""
    assert shown == editor.draft


def test_the_cog_imports_where_there_is_no_termios() -> None:
    """The terminal's modes are POSIX only; the cog imports the console's package (its model
    probe) on every platform, so nothing may need termios before a console runs."""
    blocked = "import sys; sys.modules['termios'] = None; import tomori_cog.chat"
    result = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
