"""Sprite markers: the parser cuts the same way whatever the chunks, and the writer posts each
sprite's part as its own messages, wearing it, in both delivery modes."""

from __future__ import annotations

import asyncio
import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.memory_channel import MemoryChannel
from tests.support.recording_port import RecordingPort
from tomori.config.settings import Delivery
from tomori.delivery.ceiling import CUT_NOTE
from tomori.delivery.port import AnswerCut, Urgency
from tomori.delivery.sprite_markers import Piece, SpriteMarkers, SpriteSwitch, Wardrobe, label_key
from tomori.delivery.writer import ChannelWriter
from tomori.generation.state import TurnState

NAME = "Ann"
LABELS = ("happy", "Very Sad")

LINES = [
    "Ann (happy): hi",
    "ann(HAPPY):x",
    "Ann (very  sad):\tboo",
    "Ann (nope): unknown",
    "Ann (happy) no colon",
    "Ann (happy):",
    "Ann:",
    "Ann: back",
    "Ann",
    "Annie: no",
    " Ann (happy): indented",
    "say Ann (happy): mid-line",
    "```",
    "```python",
    "plain text",
    "",
    "Ann (" + "x" * 40,
    "Ann (very" + " " * 30 + "sad): too long a label",
    "Ann (very" + " " * 20 + "sad): long but known",
]


def parsed(chunks: list[str]) -> list[Piece]:
    markers = SpriteMarkers(NAME, LABELS)
    pieces: list[Piece] = []
    for chunk in chunks:
        pieces += markers.feed(chunk)
    pieces += markers.finish()
    return joined(pieces)


def joined(pieces: list[Piece]) -> list[Piece]:
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str) and out and isinstance(out[-1], str):
            out[-1] += piece
        elif piece != "":
            out.append(piece)
    return out


_MARKER = re.compile(r"(?i:ann)(?: ?\(([^()\n]*)\)|(?=:)):[ \t]*")


def reference(text: str) -> list[Piece]:
    """The rule read line by line, as a person would apply it."""
    known = {label_key(label): label for label in LABELS}
    pieces: list[Piece] = []
    in_code = False
    for line in text.splitlines(keepends=True):
        found = None if in_code else _MARKER.match(line)
        label_text = found.group(1) if found else None
        if found and (
            label_text is None or (label_key(label_text) in known and len(label_text) <= 32)
        ):
            label = known[label_key(label_text)] if label_text is not None else None
            pieces += [SpriteSwitch(label, found.group(0)), line[found.end() :]]
        else:
            pieces.append(line)
        if re.fullmatch(r"[ \t]*`{3,}[^`\r\n]*\r?", line.rstrip("\n")):
            in_code = not in_code
    return joined(pieces)


def cuts(text: str, points: list[int]) -> list[str]:
    marks = sorted({p % (len(text) + 1) for p in points} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(marks)]


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.sampled_from(LINES), max_size=12),
    points=st.lists(st.integers(min_value=0, max_value=400), max_size=30),
)
def test_the_markers_are_the_same_whatever_the_chunks_and_no_text_is_lost(
    lines: list[str], points: list[int]
) -> None:
    text = "\n".join(lines)
    whole = parsed([text])
    assert parsed(cuts(text, points)) == whole
    assert parsed(list(text)) == whole
    assert whole == reference(text)
    rebuilt = "".join(p if isinstance(p, str) else p.marker for p in whole)
    assert rebuilt == text  # nothing lost, nothing twice: only the markers were taken out


def test_a_marker_switches_only_at_a_line_start_outside_code_and_with_a_known_label() -> None:
    text = "Hi\nAnn (happy): yay\nAnn (angry): no\n```\nAnn (happy): code\n```\nAnn: back"
    assert parsed([text]) == [
        "Hi\n",
        SpriteSwitch("happy", "Ann (happy): "),
        "yay\nAnn (angry): no\n```\nAnn (happy): code\n```\n",
        SpriteSwitch(None, "Ann: "),
        "back",
    ]


class Worn:
    """What a port wears, as its writer tells it, and the sprite each message was sent in."""

    def __init__(self, port: RecordingPort) -> None:
        self.port = port
        self.now: str | None = None
        self.sent_in: dict[str, str | None] = {}

    def wear(self, label: str | None) -> None:
        self.now = label

    def shown(self) -> list[tuple[str | None, str]]:
        """Each message as the channel shows it last, with the sprite it was sent in."""
        return [(self.sent_in[i], text) for i, text in self.port.messages.items()]


class WearingPort(RecordingPort):
    """A recording port that notes the sprite worn at each send."""

    worn: Worn

    async def send(self, content: str, *, reply_to: str | None, urgency: Urgency) -> str:
        message_id = await super().send(content, reply_to=reply_to, urgency=urgency)
        self.worn.sent_in[message_id] = self.worn.now
        return message_id


def wearing(delivery: Delivery, **kwargs: object) -> tuple[ChannelWriter, Worn, TurnState]:
    port = WearingPort()
    worn = Worn(port)
    port.worn = worn
    state = TurnState("1", notices=MemoryChannel())
    writer = ChannelWriter(
        port,
        state,
        delivery=delivery,
        edit_interval_s=0,
        first_gather_s=0,
        wardrobe=Wardrobe(NAME, LABELS, worn.wear),
        **kwargs,  # type: ignore[arg-type]
    )
    return writer, worn, state


ANSWER = "Hello there.\nAnn (happy): Yay, a party!\nIt goes on.\nAnn: Back to normal."


@pytest.mark.parametrize("delivery", list(Delivery))
@pytest.mark.parametrize("step", [1, 4, 1000])
async def test_each_marker_starts_a_message_that_wears_its_sprite(
    delivery: Delivery, step: int
) -> None:
    writer, worn, state = wearing(delivery)
    for at in range(0, len(ANSWER), step):
        writer.feed(ANSWER[at : at + step])
        await asyncio.sleep(0)
    await writer.finish()
    shown = [(sprite, text.strip()) for sprite, text in worn.shown()]
    assert shown == [
        (None, "Hello there."),
        ("happy", "Yay, a party!\nIt goes on."),
        (None, "Back to normal."),
    ]
    assert writer.sprites == ("Ann (happy)",)
    assert writer.delivered_text.replace("\n", "") == (
        "Hello there.Yay, a party!It goes on.Back to normal."
    )
    assert "Ann (happy):" not in "".join(m.text for m in state.delivered)


async def test_a_long_sprite_part_keeps_its_sprite_in_every_message_and_each_is_counted() -> None:
    long = "Ann (Very Sad): " + "\n\n".join(["word " * 300] * 3) + "\nAnn (happy): done"
    writer, worn, _ = wearing(Delivery.MESSAGES)
    writer.feed(long)
    await writer.finish()
    shown = worn.shown()
    assert len(shown) >= 3
    assert all(sprite == "Very Sad" for sprite, _ in shown[:-1])
    assert shown[-1] == ("happy", "done")
    assert writer.sprites == (*["Ann (Very Sad)"] * (len(shown) - 1), "Ann (happy)")


@pytest.mark.parametrize("delivery", list(Delivery))
async def test_the_ceiling_counts_the_text_without_its_markers_and_cuts_as_ever(
    delivery: Delivery,
) -> None:
    writer, worn, _ = wearing(delivery, max_answer_chars=60)
    try:
        for line in ["Ann (happy): " + "a" * 30 + "\n", "Ann: " + "b " * 20 + "\n"]:
            writer.feed(line)
            await asyncio.sleep(0)
    except AnswerCut:
        pass  # (edit mode knows at once; messages mode once the line is released)
    await writer.finish()
    shown = worn.shown()
    assert [sprite for sprite, _ in shown] == ["happy", None]
    assert shown[0][1].strip() == "a" * 30
    assert shown[1][1].startswith("b b")
    assert shown[1][1].rstrip().endswith(CUT_NOTE.strip())
    shown_text = "".join(text for _, text in shown).replace(CUT_NOTE.strip(), "")
    assert len(shown_text.strip()) <= 60


async def test_a_stream_that_stalls_drops_an_unfinished_marker_line_in_edit_mode() -> None:
    writer, worn, _ = wearing(Delivery.EDIT)
    writer.feed("One line.\nAnn (happy): half a li")
    await asyncio.sleep(0)
    await writer.settle()
    assert [text.strip() for _, text in worn.shown()] == ["One line."]
    assert writer.sprites == ()
