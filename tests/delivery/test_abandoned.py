"""An abandoned writer (a /kill, a timeout's end) drops at once what is not on the wire: a
request waiting for the channel's next slot never goes out, and `aclose` does not wait for
that slot; a send already with the port lands and is counted."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.memory_channel import MemoryChannel
from tests.support.recording_port import RecordingPort
from tests.support.waiting import until
from tomori.config.settings import Delivery
from tomori.delivery.writer import ChannelWriter
from tomori.generation.state import TurnState

MODES = [Delivery.MESSAGES, Delivery.EDIT]


def writer_on(port: RecordingPort, delivery: Delivery) -> tuple[ChannelWriter, TurnState]:
    state = TurnState("300", notices=MemoryChannel())
    writer = ChannelWriter(port, state, delivery=delivery, first_gather_s=0, edit_interval_s=0)
    return writer, state


@pytest.mark.parametrize("delivery", MODES)
async def test_a_request_waiting_for_the_channel_is_dropped_at_once(delivery: Delivery) -> None:
    slot = asyncio.Event()
    slot.set()
    port = RecordingPort(gate=slot)
    writer, state = writer_on(port, delivery)
    writer.feed("One.\n\n")
    await until(lambda: len(port.calls) == 1)
    slot.clear()  # the channel's next slot is far off
    writer.feed("Two.\n\n")
    await until(lambda: len(port.writable_calls) == 2)  # and the writer waits for it
    writer.abandon()
    async with asyncio.timeout(5):  # not until the slot comes
        await writer.aclose()
    slot.set()
    for _ in range(10):  # the slot came: nothing of the abandoned answer goes out
        await asyncio.sleep(0)
    assert port.channel_text == ["One.\n\n"]
    assert writer.delivered_text == "One.\n\n"
    assert [message.text for message in state.delivered] == ["One.\n\n"]


@pytest.mark.parametrize("delivery", MODES)
async def test_a_send_on_the_wire_lands_and_is_counted(delivery: Delivery) -> None:
    port = RecordingPort(delay=0.05)
    writer, state = writer_on(port, delivery)
    writer.feed("One.\n\n")
    await until(lambda: len(port.writable_calls) == 1)  # the send has left
    writer.abandon()
    await writer.aclose()
    assert port.channel_text == ["One.\n\n"]
    assert [message.text for message in state.delivered] == ["One.\n\n"]
