"""Property tests for the text path: any answer, cut into any chunks, in both delivery modes.

What a user would notice is checked, whatever the model writes and however the provider
chunks it: the channel shows the model's text minus its hidden blocks (modulo the fences the
splitter adds to close and reopen a split code block, and whitespace Discord trims), no message
is over Discord's limit, every message renders its code blocks balanced, no grapheme cluster is
split between messages, and a protected span that fits one message is never split. In edit mode
a shown message only ever grows.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Sequence

import pytest
import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support.memory_channel import MemoryChannel
from tests.support.recording_port import RecordingPort
from tomori.config.settings import Delivery
from tomori.delivery.ceiling import CUT_NOTE
from tomori.delivery.chunking import HARD_LIMIT, MESSAGE_LIMIT, protected_spans
from tomori.delivery.fences import fence_line
from tomori.delivery.hidden import HiddenBlocks
from tomori.delivery.port import AnswerCut
from tomori.delivery.writer import ChannelWriter
from tomori.generation.state import TurnState

TOKENS = [
    "```",
    "```py",
    "```html",
    "\n",
    "\n",
    "\n\n",
    " ",
    " ",
    "word",
    "text",
    "a" * 700,
    "`",
    "`inline code`",
    "```npm i```",
    "https://example.com/a/path?q=1",
    "https://example.com/" + "p" * 1500,
    "<@123456789>",
    "<:wave:123456789>",
    "[docs](https://docs.example.com)",
    "[the docs here](https://docs.example.com/a/b)",
    "**bold words**",
    "*some italic words*",
    "__under lined__",
    "~~struck out~~",
    "||a hidden spoiler||",
    "||",
    "**",
    "*",
    "_",
    "~",
    "\U0001f44d\U0001f3fd",  # thumbs up, medium skin tone
    "\U0001f469\u200d\U0001f469\u200d\U0001f467",  # a family (ZWJ sequence)
    "\U0001f1ef\U0001f1f5",  # a flag
    "e\u0301",  # e and a combining acute accent
    "\u0301",
    "漢字",
    "<details>",
    "</details>",
    "<DETAILS open>",
    "<summary>s</summary>",
    "<think>",
    "</think>",
    "<",
]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

texts = st.lists(st.sampled_from(TOKENS), max_size=120).map("".join)


@st.composite
def chunked(draw: st.DrawFn) -> list[str]:
    """A text from the hard parts, split into arbitrary chunks."""
    text = draw(texts)
    sizes = draw(st.lists(st.integers(1, 600), max_size=60))
    chunks, at = [], 0
    for size in sizes:
        if at >= len(text):
            break
        chunks.append(text[at : at + size])
        at += size
    if at < len(text):
        chunks.append(text[at:])
    return chunks


def capture(chunks: list[str]) -> tuple[str, str]:
    blocks = HiddenBlocks()
    visible, hidden = [], []
    for chunk in chunks:
        shown, captured = blocks.feed(chunk)
        visible.append(shown)
        hidden.append(captured)
    shown, captured = blocks.finish()
    return "".join([*visible, shown]), "".join([*hidden, captured])


def content(text: str) -> str:
    """The text without fence lines and whitespace: what must survive any cutting."""
    lines = (line for line in text.split("\n") if fence_line(line) is None)
    return re.sub(r"\s+", "", "".join(lines))


async def deliver(
    chunks: list[str],
    delivery: Delivery,
    max_answer_chars: int = 10_000_000,
    writable_turns: Sequence[int] = (),
) -> RecordingPort:
    """What `_generate` does with text events: hide blocks, feed the writer (one event-loop
    turn between chunks, and the channel writable after `writable_turns` turns each time)."""
    port = RecordingPort(writable_turns=writable_turns)
    state = TurnState("1", notices=MemoryChannel())
    writer = ChannelWriter(
        port, state, delivery=delivery, edit_interval_s=0, max_answer_chars=max_answer_chars
    )
    blocks = HiddenBlocks()
    for chunk in [*chunks, None]:
        shown, _ = blocks.feed(chunk) if chunk is not None else blocks.finish()
        try:
            if shown:
                writer.feed(shown)
        except AnswerCut:
            break  # what _generate does: stop reading
        await asyncio.sleep(0)
    await writer.finish()
    return port


def long_fence_like_line(text: str) -> bool:
    """A fence-like line longer than a message must be cut, and its parts read differently."""
    return any(len(line) > MESSAGE_LIMIT and "```" in line for line in text.split("\n"))


def check_messages(messages: list[str], expected: str) -> None:
    assert all(len(message) <= HARD_LIMIT for message in messages)
    if long_fence_like_line(expected):
        return
    assert content("".join(messages)) == content(expected)
    ends_opening = fence_line(expected.rstrip("\n").split("\n")[-1]) is not None
    for index, message in enumerate(messages):
        assert len(message) <= HARD_LIMIT
        fences = [line for line in message.split("\n") if fence_line(line) is not None]
        # a model that ends on an opening fence wrote it, with nothing to close
        last_may_open = ends_opening and index == len(messages) - 1
        assert len(fences) % 2 == 0 or last_may_open, message
    for before, after in itertools.pairwise(messages):
        if fence_line(before.split("\n")[-1]) or fence_line(after.split("\n")[0]):
            continue  # the splitter's own close and reopen
        joint = before[-16:] + after[:16]
        starts = {match.start() for match in regex.finditer(r"\X", joint)}
        assert len(before[-16:]) in starts, (before[-16:], after[:16])
    for span in protected_spans(expected):
        piece = expected[span.start : span.end]
        if span.fence is None and len(piece) <= HARD_LIMIT:
            assert any(piece in message for message in messages), piece


@SETTINGS
@given(chunked())
def test_hidden_blocks_do_not_depend_on_chunking(chunks: list[str]) -> None:
    assert capture(chunks) == capture(["".join(chunks)])


writable_delays = st.lists(st.integers(0, 4), max_size=8)
"""Event-loop turns the channel stays unwritable before each request (cycled), while the
chunks go on coming: as Discord's limits and the bot's request budget hold a channel."""


@SETTINGS
@given(chunked(), writable_delays)
def test_messages_mode_delivers_the_visible_text_intact(
    chunks: list[str], delays: list[int]
) -> None:
    port = asyncio.run(deliver(chunks, Delivery.MESSAGES, writable_turns=delays))
    assert {call.kind for call in port.calls} <= {"send"}
    check_messages(port.channel_text, capture(chunks)[0])


PARAGRAPHS = st.lists(
    st.text(st.sampled_from("abcdefghij .,!?"), min_size=1, max_size=150)
    .map(str.strip)
    .filter(bool),
    min_size=2,
    max_size=30,
).map("\n\n".join)


@st.composite
def short_answer_in_chunks(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A multi-paragraph answer under a message's length, cut into random chunks."""
    text = draw(PARAGRAPHS.filter(lambda text: len(text) <= MESSAGE_LIMIT))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=20)))
    return text, [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)]) if a < b]


@SETTINGS
@given(short_answer_in_chunks())
def test_a_short_multi_paragraph_answer_ready_at_once_is_one_message(
    case: tuple[str, list[str]],
) -> None:
    """All of it came before the channel could be written to: it goes out as one message."""
    text, chunks = case

    async def held_then_released() -> RecordingPort:
        port = RecordingPort(gate=asyncio.Event())
        writer = ChannelWriter(port, TurnState("1", notices=MemoryChannel()))
        for chunk in chunks:
            writer.feed(chunk)
            await asyncio.sleep(0)
        assert port.gate is not None
        port.gate.set()
        await writer.finish()
        return port

    port = asyncio.run(held_then_released())
    assert port.channel_text == [text]


@SETTINGS
@given(chunked(), writable_delays, st.sampled_from([Delivery.MESSAGES, Delivery.EDIT]))
def test_the_messages_joined_read_as_the_answer(
    chunks: list[str], delays: list[int], delivery: Delivery
) -> None:
    """However the text came and however long the channel was held, the messages in order
    are the answer (what the splitter adds to close and reopen a code block aside)."""
    expected = capture(chunks)[0]
    if long_fence_like_line(expected):
        return
    port = asyncio.run(deliver(chunks, delivery, writable_turns=delays))
    final = list({call.message_id: call.content for call in port.calls}.values())
    joined = "".join(
        line for message in final for line in message.split("\n") if fence_line(line) is None
    )
    assert re.sub(r"\s+", "", joined) == content(expected)
    assert all(len(message) <= HARD_LIMIT for message in final)


@SETTINGS
@given(chunked(), writable_delays)
@example(  # "**" after a URL that swallowed an opening "**" opens a span more text closes
    [
        "h",
        "t",
        "t",
        "ps://example.com/" + "p" * 314,
        "p" * 600,
        "p" * 586 + "**bold words**",
        "https://example.com/" + "p" * 1500 + "**",
    ],
    [],
)
def test_edit_mode_messages_only_grow_and_end_intact(chunks: list[str], delays: list[int]) -> None:
    port = asyncio.run(deliver(chunks, Delivery.EDIT, writable_turns=delays))
    shown: dict[str, str] = {}
    for call in port.calls:
        assert call.content.startswith(shown.get(call.message_id, "")), call
        shown[call.message_id] = call.content
    check_messages(list(shown.values()), capture(chunks)[0])


@SETTINGS
@given(chunked(), st.sampled_from([Delivery.MESSAGES, Delivery.EDIT]))
def test_an_answer_never_shows_more_characters_than_its_ceiling(
    chunks: list[str], delivery: Delivery
) -> None:
    port = asyncio.run(deliver(chunks, delivery, max_answer_chars=2 * MESSAGE_LIMIT))
    messages = list({call.message_id: call.content for call in port.calls}.values())
    note = CUT_NOTE.lstrip()  # (alone, when the message it would end was already sent)
    cut = bool(messages) and (messages[-1].endswith(CUT_NOTE) or messages[-1] == note)
    read = [message.removesuffix(CUT_NOTE) for message in messages if message != note]
    assert sum(len(text) for text in read) <= 2 * MESSAGE_LIMIT
    assert all(len(message) <= HARD_LIMIT for message in messages)
    if long_fence_like_line(capture(chunks)[0]):
        return
    shown = content("".join(read))
    expected = content(capture(chunks)[0])
    if cut:
        assert len(shown) < len(expected)
    else:
        assert shown == expected


SPANS = [
    "[click here for the docs](https://docs.example.com/a/b/index.html)",
    "`some inline code span here`",
    "**this is some bold text here**",
    "*some italic words in here*",
    "__some underlined words__",
    "~~some struck out words~~",
    "||a hidden spoiler text here||",
]


@st.composite
def span_at_the_cut(draw: st.DrawFn) -> tuple[str, list[str]]:
    """Prose that reaches the message limit just inside a span, in small chunks."""
    span = draw(st.sampled_from(SPANS))
    text = ("lorem ipsum dolor sit amet " * 80)[: draw(st.integers(1_890, 1_950))]
    text += " " + span + " after."
    size = draw(st.integers(1, 7))
    return span, [text[at : at + size] for at in range(0, len(text), size)]


@pytest.mark.slow  # many generated cases
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(span_at_the_cut(), st.sampled_from([Delivery.MESSAGES, Delivery.EDIT]))
def test_a_span_at_the_cut_is_kept_whole_however_it_is_chunked(
    case: tuple[str, list[str]], delivery: Delivery
) -> None:
    span, chunks = case
    port = asyncio.run(deliver(chunks, delivery))
    messages = list({call.message_id: call.content for call in port.calls}.values())
    assert any(span in message for message in messages), [m[-40:] for m in messages]
    if delivery is Delivery.MESSAGES:
        assert messages == asyncio.run(deliver(["".join(chunks)], delivery)).channel_text
