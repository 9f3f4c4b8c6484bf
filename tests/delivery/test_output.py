from __future__ import annotations

import asyncio
import contextlib

import pytest

from tests.support.memory_channel import MemoryChannel
from tests.support.recording_port import RecordingPort
from tomori.config.settings import Delivery
from tomori.delivery.ceiling import CUT_NOTE
from tomori.delivery.port import (
    AnswerCut,
    DeliveryFailed,
    DeliveryRateLimited,
    DestinationUnreachable,
    Urgency,
)
from tomori.delivery.writer import FIRST_GATHER_S, ChannelWriter
from tomori.generation.state import TurnState

ANSWER = "First paragraph.\n\nSecond paragraph,\nwith two lines.\n\nLast."


def context(*, from_queue: bool = False) -> TurnState:
    return TurnState("300", notices=MemoryChannel(), trigger_message_id="42", from_queue=from_queue)


async def stream(writer: ChannelWriter, text: str, step: int = 5, pause: float = 0.0) -> None:
    for at in range(0, len(text), step):
        writer.feed(text[at : at + step])
        await asyncio.sleep(pause)
    await writer.finish()


async def test_the_first_message_gathers_an_answer_that_ends_within_a_quarter_second() -> None:
    port = RecordingPort()
    writer = ChannelWriter(port, context())
    writer.feed("First paragraph.\n\n")
    await asyncio.sleep(FIRST_GATHER_S / 2)
    writer.feed("Second paragraph.\n\nLast.")
    await writer.finish()
    assert port.channel_text == ["First paragraph.\n\nSecond paragraph.\n\nLast."]


async def test_the_first_message_waits_no_longer_than_its_gathering() -> None:
    port = RecordingPort()
    writer = ChannelWriter(port, context())
    writer.feed("First paragraph.\n\nSecond")
    await asyncio.sleep(FIRST_GATHER_S + 0.1)
    assert port.channel_text == ["First paragraph.\n\n"]
    writer.feed(" paragraph.")
    await writer.finish()
    assert port.channel_text == ["First paragraph.\n\n", "Second paragraph."]


async def test_messages_mode_sends_each_paragraph_once_and_the_first_as_a_reply() -> None:
    port = RecordingPort()
    state = context(from_queue=True)
    progress: list[int] = []
    state.on_stream_progress = lambda: progress.append(1)
    writer = ChannelWriter(port, state, first_gather_s=0)
    await stream(writer, ANSWER, pause=0.01)  # each paragraph sent before the next is in
    assert [call.kind for call in port.calls] == ["send", "send", "send"]
    assert port.channel_text == [
        "First paragraph.\n\n",
        "Second paragraph,\nwith two lines.\n\n",
        "Last.",
    ]
    assert [call.reply_to for call in port.calls] == ["42", None, None]
    assert writer.delivered_text == ANSWER
    assert [m.text for m in state.delivered] == port.channel_text
    assert len(progress) == 3


async def test_a_turn_that_was_not_queued_posts_plain_messages() -> None:
    port = RecordingPort()
    await stream(ChannelWriter(port, context()), ANSWER)
    assert {call.reply_to for call in port.calls} == {None}


async def test_edit_mode_grows_one_message_no_faster_than_the_interval() -> None:
    port = RecordingPort()
    state = context()
    writer = ChannelWriter(port, state, delivery=Delivery.EDIT, edit_interval_s=0.05)
    words = " ".join(f"word{n}" for n in range(60))
    started = asyncio.get_running_loop().time()
    await stream(writer, words, step=6, pause=0.005)
    elapsed = asyncio.get_running_loop().time() - started
    assert port.calls[0].kind == "send"
    assert {call.kind for call in port.calls[1:]} == {"edit"}
    assert len(port.calls) <= elapsed / 0.05 + 2
    assert port.channel_text == [words]
    assert writer.delivered_text == words
    assert [m.text for m in state.delivered] == [words]


async def test_edit_mode_goes_on_in_a_new_message_past_the_limit() -> None:
    port = RecordingPort()
    writer = ChannelWriter(port, context(), delivery=Delivery.EDIT, edit_interval_s=0.001)
    text = " ".join(["lorem"] * 800)  # 4,799 characters
    await stream(writer, text, step=200, pause=0.002)
    assert len(port.messages) == 3
    assert all(len(content) <= 1950 for content in port.channel_text)
    assert "".join(port.channel_text) == text
    assert writer.delivered_text == text


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_a_rate_limit_is_waited_out(delivery: Delivery) -> None:
    port = RecordingPort(failures={0: DeliveryRateLimited(0.05)})
    writer = ChannelWriter(port, context(), delivery=delivery)
    await stream(writer, "Hello there.")
    assert port.channel_text == ["Hello there."]


async def test_an_unreachable_channel_ends_delivery_and_says_so() -> None:
    port = RecordingPort(failures={1: DestinationUnreachable("403 Missing Access")})
    writer = ChannelWriter(port, context(), first_gather_s=0)
    with pytest.raises(DestinationUnreachable):
        await stream(writer, ANSWER)
    assert port.channel_text == ["First paragraph.\n\n"]
    with pytest.raises(DestinationUnreachable):
        writer.feed("more")


async def test_one_failed_message_does_not_stop_the_rest() -> None:
    port = RecordingPort(failures={0: DeliveryFailed("400 bad request")})
    writer = ChannelWriter(port, context(), first_gather_s=0)
    await stream(writer, ANSWER, pause=0.01)
    assert port.channel_text == ["Second paragraph,\nwith two lines.\n\n", "Last."]
    assert writer.delivered_text == "Second paragraph,\nwith two lines.\n\nLast."


async def test_settle_delivers_the_complete_lines_and_drops_the_unfinished_one() -> None:
    port = RecordingPort(delay=0.1)
    writer = ChannelWriter(port, context())
    writer.feed("On the wire.\n\nWaiting.\n\nA whole line\nand a line the stream stopped in")
    await asyncio.sleep(0.01)
    await writer.settle()
    assert writer.delivered_text == "On the wire.\n\nWaiting.\n\nA whole line\n"
    assert "stopped in" not in "".join(port.channel_text)


async def test_in_edit_mode_settle_keeps_what_is_shown_and_drops_what_was_held() -> None:
    port = RecordingPort()
    writer = ChannelWriter(port, context(), delivery=Delivery.EDIT, edit_interval_s=0)
    writer.feed("A whole line\nshown as it came, and then `yarn")  # the run may open code
    await asyncio.sleep(0.05)
    await writer.settle()
    assert writer.delivered_text == "A whole line\nshown as it came, and then "
    assert "yarn" not in "".join(port.channel_text)


async def test_edit_mode_cuts_a_long_code_block_only_at_line_ends() -> None:
    port = RecordingPort()
    writer = ChannelWriter(port, context(), delivery=Delivery.EDIT, edit_interval_s=0)
    lines = [f"value_{n:03d} = compute(value_{n - 1:03d}) + {n}" for n in range(1, 120)]
    await stream(writer, "```python\n" + "\n".join(lines) + "\n```", step=5)
    final = list({call.message_id: call.content for call in port.calls}.values())
    assert len(final) > 1
    assert [line for text in final for line in text.split("\n") if "```" not in line] == lines
    for call in port.calls:  # every state shown ends at a line end (or at the fence it opens)
        body = call.content.removeprefix("```python\n").removesuffix("```")
        assert body == "" or body.endswith("\n") or call is port.calls[-1], call.content[-40:]


@pytest.mark.parametrize("step", [1, 3, 5])
async def test_edit_mode_keeps_whole_code_lines_when_a_shown_line_fills_the_message(
    step: int,
) -> None:
    """A code line shown up to the target length: the fence is closed after it, not in it."""
    port = RecordingPort()
    writer = ChannelWriter(port, context(), delivery=Delivery.EDIT, edit_interval_s=0)
    lines = [f"console.log({n}); // " + "x" * 40 for n in range(80)]
    await stream(writer, "```js\n" + "\n".join(lines) + "\n```", step=step)
    final = list({call.message_id: call.content for call in port.calls}.values())
    assert len(final) > 1
    assert [line for text in final for line in text.split("\n") if "```" not in line] == lines
    assert all(len(text) <= 2_000 for text in final)
    shown: dict[str, str] = {}
    for call in port.calls:  # a message the user reads only grows
        before = shown.get(call.message_id, "")
        assert call.content.startswith(before.removesuffix("\n```")), call.content[-40:]
        shown[call.message_id] = call.content


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_one_huge_chunk_fills_the_ceiling_and_is_cut(delivery: Delivery) -> None:
    port = RecordingPort()
    state = context()
    reached = asyncio.Event()
    state.on_ceiling = reached.set
    writer = ChannelWriter(
        port, state, delivery=delivery, edit_interval_s=0, max_answer_chars=3 * 1950
    )
    with contextlib.suppress(AnswerCut):  # messages mode cuts at once, edit mode as it sends
        writer.feed("lorem ipsum dolor sit amet " * 100_000)
        await asyncio.wait_for(reached.wait(), 20)  # however long a busy machine takes
    with pytest.raises(AnswerCut):
        writer.feed("more")
    await writer.finish()
    final = list({call.message_id: call.content for call in port.calls}.values())
    assert final[-1].endswith(CUT_NOTE)
    assert not final[-1].startswith(CUT_NOTE)  # the note ends the answer's text
    assert all(len(message) <= 2_000 for message in final)
    read = sum(len(message.removesuffix(CUT_NOTE)) for message in final)
    assert 3 * 1950 - 30 <= read <= 3 * 1950  # the ceiling is filled, not passed


async def test_edit_mode_never_shows_half_an_emoji_sequence() -> None:
    port = RecordingPort()
    writer = ChannelWriter(port, context(), delivery=Delivery.EDIT, edit_interval_s=0)
    family = "\U0001f469\u200d\U0001f469\u200d\U0001f467"
    for chunk in [
        "Hi \U0001f469\u200d",
        "\U0001f469\u200d",
        "\U0001f467 and \U0001f1ef",
        "\U0001f1f5!",
    ]:
        writer.feed(chunk)
        await asyncio.sleep(0.01)
    await writer.finish()
    assert port.channel_text == [f"Hi {family} and \U0001f1ef\U0001f1f5!"]
    for call in port.calls:
        assert not call.content.endswith(("\u200d", "\U0001f1ef")), call.content


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_the_cut_note_always_fits_the_last_message(delivery: Delivery) -> None:
    port = RecordingPort()
    writer = ChannelWriter(
        port, context(), delivery=delivery, edit_interval_s=0, max_answer_chars=1950
    )
    text = "https://example.com/" + "p" * 1_970 + "\n\n" + "more words " * 300
    with contextlib.suppress(AnswerCut):
        await stream(writer, text, step=50, pause=0.001)
    await writer.finish()
    final = list({call.message_id: call.content for call in port.calls}.values())
    assert len(final) == 1
    assert all(len(message) <= 2_000 for message in final), [len(m) for m in final]
    shown = final[0].removesuffix(CUT_NOTE)
    assert shown != final[0]  # the note is there
    assert shown.strip()  # with the answer's text before it
    assert text.startswith(shown)


async def test_a_burst_of_paragraphs_while_the_channel_is_held_goes_out_in_one_message() -> None:
    port = RecordingPort(gate=asyncio.Event())
    writer = ChannelWriter(port, context())
    paragraphs = [f"Point {n}: a short line." for n in range(15)]
    for paragraph in paragraphs:  # each one complete, while the first send waits its turn
        writer.feed(paragraph + "\n\n")
        await asyncio.sleep(0)
    assert port.calls == []
    assert port.gate is not None
    port.gate.set()
    await writer.finish()
    assert port.channel_text == ["\n\n".join(paragraphs) + "\n\n"]
    assert [call.urgency for call in port.calls] == [Urgency.FIRST]


async def test_text_past_one_message_goes_out_in_as_few_full_messages_as_fit() -> None:
    port = RecordingPort(gate=asyncio.Event())
    writer = ChannelWriter(port, context())
    paragraphs = [f"{n:02d} " + "word " * 60 for n in range(40)]  # 40 x 303 characters
    writer.feed("\n\n".join(paragraphs))
    assert port.gate is not None
    port.gate.set()
    await writer.finish()
    assert [len(text) for text in port.channel_text] == [6 * 305] * 6 + [4 * 305 - 2]
    assert "".join(port.channel_text) == "\n\n".join(paragraphs)


async def test_messages_mode_asks_first_for_the_first_text_and_last_for_the_end() -> None:
    port = RecordingPort(gate=asyncio.Event())
    writer = ChannelWriter(port, context(), first_gather_s=0)
    writer.feed("First paragraph.\n\n")
    await asyncio.sleep(0)
    assert port.gate is not None
    port.gate.set()
    await asyncio.sleep(0.01)
    writer.feed("Second paragraph.\n\n")
    await asyncio.sleep(0.01)
    writer.feed("The end.")
    await writer.finish()
    assert [(call.content, call.urgency) for call in port.calls] == [
        ("First paragraph.\n\n", Urgency.FIRST),
        ("Second paragraph.\n\n", Urgency.MORE),
        ("The end.", Urgency.LAST),
    ]


async def test_edit_mode_edits_once_per_time_the_channel_may_be_written() -> None:
    """Under load the edit interval stretches: text that comes while the channel is held is
    shown by one edit once it may be written, the first send asked for first, the last edit
    for last."""
    port = RecordingPort()
    writer = ChannelWriter(port, context(), delivery=Delivery.EDIT, edit_interval_s=0)
    writer.feed("Hello there, ")
    await asyncio.sleep(0.01)
    port.gate = asyncio.Event()  # the channel's bucket is empty for a while
    for word in ["this", "text", "comes", "while", "nothing", "may", "be", "sent"]:
        writer.feed(word + " ")
        await asyncio.sleep(0.005)
    assert len(port.calls) == 1
    port.gate.set()
    await asyncio.sleep(0.01)
    writer.feed("and the end.")
    await writer.finish()
    assert [(call.kind, call.urgency) for call in port.calls] == [
        ("send", Urgency.FIRST),
        ("edit", Urgency.MORE),
        ("edit", Urgency.LAST),
    ]
    assert port.calls[1].content == "Hello there, this text comes while nothing may be sent "
    assert port.channel_text == [
        "Hello there, this text comes while nothing may be sent and the end."
    ]


async def test_a_12k_character_answer_arrives_whole_under_the_default_ceiling() -> None:
    port = RecordingPort()
    writer = ChannelWriter(port, context())
    text = "\n\n".join(f"Section {n}. " + "Some explanation here. " * 20 for n in range(27))
    assert len(text) > 12_000
    await stream(writer, text, step=40)
    assert "".join(port.channel_text) == text
    assert not port.channel_text[-1].endswith(CUT_NOTE)
