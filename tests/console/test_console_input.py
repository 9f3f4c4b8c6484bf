"""The console's standard input: lines however the bytes arrive, and a reader that stops."""

from __future__ import annotations

import asyncio
import os
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from tomori.console.input import LineReader, MessageLines

CHARACTERS = st.characters(exclude_characters="\n\r", exclude_categories=["Cs"])
LINES = st.lists(st.text(CHARACTERS, max_size=30), max_size=8)


@settings(max_examples=60, deadline=None)
@given(lines=LINES, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_every_line_arrives_whole_and_in_order_however_the_bytes_are_cut(
    lines: list[str], cuts: list[int]
) -> None:
    data = "".join(line + "\n" for line in lines).encode()
    pieces, start = [], 0
    for cut in sorted({min(cut, len(data)) for cut in cuts}):
        pieces.append(data[start:cut])
        start = cut
    pieces.append(data[start:])

    async def read_all() -> list[str | None]:
        read_end, write_end = os.pipe()

        def write() -> None:
            for piece in pieces:
                os.write(write_end, piece)
            os.close(write_end)

        reader = LineReader(read_end)
        reader.start()
        writer = threading.Thread(target=write)
        writer.start()
        got: list[str | None] = []
        try:
            async with asyncio.timeout(10):
                while not got or got[-1] is not None:
                    got.append(await reader.next_line())
        finally:
            reader.stop()
            writer.join()
            os.close(read_end)
        return got

    assert asyncio.run(read_all()) == [*lines, None]


async def test_stop_wakes_a_reader_waiting_for_input_and_ends_its_thread() -> None:
    read_end, write_end = os.pipe()
    reader = LineReader(read_end)
    reader.start()
    try:
        await asyncio.sleep(0.05)  # the thread waits in select
        assert any(thread.name == "tomori-console-input" for thread in threading.enumerate())
        reader.stop()
        assert all(thread.name != "tomori-console-input" for thread in threading.enumerate())
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_code_block_is_one_message_and_a_backslash_goes_on() -> None:
    gathered = MessageLines()
    typed = ["Look at this:", "```python", "print(1)", "", "```", "and this \\", "too", "bye"]
    messages = [message for line in typed if (message := gathered.add(line)) is not None]
    assert messages == ["Look at this:", "```python\nprint(1)\n\n```", "and this \ntoo", "bye"]
    assert not gathered.open


@given(st.lists(st.text(alphabet="ab `", max_size=12), max_size=12))
def test_every_line_is_sent_once_in_order_and_no_message_ends_inside_a_fence(
    lines: list[str],
) -> None:
    gathered = MessageLines()
    messages = [message for line in lines if (message := gathered.add(line)) is not None]
    assert all(message.count("```") % 2 == 0 for message in messages)
    last = gathered.flush()
    sent = [*messages, *([last] if last is not None else [])]
    assert "".join(sent).replace("\n", "") == "".join(lines)  # nothing lost, nothing added
