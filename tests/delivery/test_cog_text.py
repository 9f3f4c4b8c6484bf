"""What a channel shows for answers with code, long spans, emoji, hidden blocks, and no end.

Each test sends a message through a real nextcord bot to the local LLM server and reads what
the channel shows, in the delivery mode a bot author picks.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import regex

from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import Action, LLMServer, Reply, hold_until, pause, sse, stall
from tests.support.nextcord_fake import OpenNextcord
from tests.support.openai_wire import chunk
from tests.support.scripts import answer
from tests.support.waiting import until
from tomori.config.settings import Delivery
from tomori.delivery.ceiling import most_read


def looping(line: str, *, gap: float = 0.002, lines: int = 2_000) -> Reply:
    """A model that repeats `line` at a steady pace and never finishes."""
    body: list[Action] = []
    for _ in range(lines):
        body += [pause(gap), sse(chunk(line))]
    return Reply(body=[*body, stall()])


async def ask(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    reply: Reply,
    **settings: object,
) -> list[str]:
    nc = await open_nextcord(settings_for(tmp_path, **settings), chain_for(llm_server))
    llm_server.script(reply)
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    return nc.discord.contents()


async def closed_by_the_bot(llm_server: LLMServer) -> None:
    """The model server saw the bot close the first request's connection (within 5 s)."""
    connection = llm_server.requests[0].connection
    assert connection is not None
    await asyncio.wait_for(connection.closed.wait(), 5)
    assert connection.closed_by_client


async def test_an_answer_ending_on_its_closing_fence_gets_no_stray_fence(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    text = "Here you go:\n```py\nprint('hi')\n```"
    shown = await ask(tmp_path, llm_server, open_nextcord, answer(text, pieces=5))
    assert shown == [text]


async def test_a_one_line_snippet_is_not_taken_for_a_fence(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    text = "```npm i``` installs it.\n\nThen run it."
    shown = await ask(tmp_path, llm_server, open_nextcord, answer(text, pieces=7))
    assert shown == [text]  # whole: the snippet opened no fence that would hold it back


async def test_a_cut_inside_a_word_keeps_emoji_and_skin_tone_together(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    thumbs = "\U0001f44d\U0001f3fd"
    text = "x" + thumbs * 1_200
    shown = await ask(tmp_path, llm_server, open_nextcord, answer(text, pieces=3))
    assert "".join(shown) == text
    for message in shown:
        clusters = regex.findall(r"\X", message)
        assert set(clusters) <= {"x", thumbs}, message[:4]


async def test_a_url_that_fits_one_message_is_not_cut(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    url = "https://example.com/" + "p" * 1_960
    text = f"See {url} for more."
    shown = await ask(tmp_path, llm_server, open_nextcord, answer(text, pieces=4))
    assert url in shown


async def test_in_edit_mode_a_shown_message_only_grows(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    nc = await open_nextcord(
        settings_for(tmp_path, delivery=Delivery.EDIT, stream_edit_interval_ms=10),
        chain_for(llm_server),
    )
    text = "word " * 300 + "\n\n" + "more " * 300
    llm_server.script(answer(text, pieces=60, gap=0.01))
    nc.say(f"{nc.mention()} grow")
    await nc.settled()
    seen: dict[int, str] = {}
    for edit in nc.discord.edits:
        before = seen.get(edit["id"], "")
        assert edit["content"].startswith(before), (len(before), len(edit["content"]))
        seen[edit["id"]] = edit["content"]
    assert " ".join(nc.discord.contents()).split() == text.split()


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_a_model_that_never_stops_is_cut_at_the_answer_ceiling(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord, delivery: Delivery
) -> None:
    settings = settings_for(
        tmp_path, max_answer_chars=3 * 1950, delivery=delivery, stream_edit_interval_ms=10
    )
    nc = await open_nextcord(settings, chain_for(llm_server))
    paragraph = "I will say this again and again.\n\n"
    llm_server.script(looping(paragraph))
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    shown = nc.discord.contents()
    assert shown[-1].endswith("(The answer was cut here: it was too long.)")
    read = "".join(shown).count(paragraph.strip()) * len(paragraph)  # (Discord trims the ends)
    assert 3 * 1950 - 2 * len(paragraph) <= read <= 3 * 1950
    assert all(len(message) <= 2_000 for message in shown)
    assert nc.discord.embeds() == []  # no timeout or error notice
    await closed_by_the_bot(llm_server)


NOTE = "-# (The answer was cut here: it was too long.)"
REASONING = "and yet I must think about it once more. " * 10


@pytest.mark.parametrize(
    ("delivery", "expected"),
    [
        (Delivery.MESSAGES, ["Let me see.", NOTE]),  # the sent message stays: the note follows
        (Delivery.EDIT, [f"Let me see.\n\n{NOTE}"]),  # the shown message takes the note
    ],
    ids=["messages", "edit"],
)
async def test_a_model_looping_on_hidden_reasoning_is_cut_like_at_the_ceiling(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    delivery: Delivery,
    expected: list[str],
) -> None:
    """The model's first words are shown, then it reasons in a loop nobody sees: the pass is cut
    once it read more than it may, as at the ceiling. The loop starts once the channel shows the
    first words, as a real one would (tens of thousands of characters take minutes), not after
    a pause a busy machine may stretch past the first message's gathering."""
    settings = settings_for(
        tmp_path, max_answer_chars=1950, delivery=delivery, stream_edit_interval_ms=10
    )
    nc = await open_nextcord(settings, chain_for(llm_server))
    started = asyncio.Event()
    loop = looping(REASONING, gap=0.001)
    llm_server.script(
        Reply(body=[sse(chunk("Let me see.\n\n<think>")), hold_until(started), *loop.body])
    )
    nc.say(f"{nc.mention()} hi")
    await until(lambda: bool(nc.discord.contents()))
    started.set()
    await nc.settled()
    assert nc.discord.contents() == expected
    assert nc.discord.embeds() == []  # no timeout or error notice
    await closed_by_the_bot(llm_server)


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_reasoning_past_the_bound_before_anything_went_out_ends_the_first_message(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord, delivery: Delivery
) -> None:
    """The chunk that starts the answer brings more reasoning than a pass may read: the cut comes
    before the first message went out, so in either mode that message takes the note (one
    chunk: nothing in between lets the message go first, however busy the machine)."""
    settings = settings_for(
        tmp_path, max_answer_chars=1950, delivery=delivery, stream_edit_interval_ms=10
    )
    nc = await open_nextcord(settings, chain_for(llm_server))
    reasoning = REASONING * (most_read(1950) // len(REASONING) + 1)
    llm_server.script(Reply(body=[sse(chunk(f"Let me see.\n\n<think>{reasoning}")), stall()]))
    nc.say(f"{nc.mention()} hi")
    await nc.settled()
    assert nc.discord.contents() == [f"Let me see.\n\n{NOTE}"]
    assert nc.discord.embeds() == []
    await closed_by_the_bot(llm_server)


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_details_and_think_blocks_are_not_posted_in_either_mode(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord, delivery: Delivery
) -> None:
    text = (
        "<think>The user wants a sum.</think>\n\nThe answer is 4.\n\n"
        "<DETAILS open><summary>Notes</summary>my hidden notes</details>\n\n"
        "Use `<details>` to fold text."
    )
    reply = answer(text, pieces=31)
    shown = await ask(
        tmp_path, llm_server, open_nextcord, reply, delivery=delivery, stream_edit_interval_ms=10
    )
    expected = "The answer is 4. Use `<details>` to fold text."
    assert " ".join(shown).split() == expected.split()


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
async def test_a_lone_backtick_opens_no_inline_code_that_would_show_a_think_block(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord, delivery: Delivery
) -> None:
    text = "Press the ` key. <think>secret plan</think> Answer.\n\nUse `<think>` tags."
    reply = answer(text, pieces=9)
    shown = await ask(
        tmp_path, llm_server, open_nextcord, reply, delivery=delivery, stream_edit_interval_ms=10
    )
    expected = "Press the ` key. Answer. Use `<think>` tags."
    assert " ".join(shown).split() == expected.split()


@pytest.mark.slow  # a long answer at the edit interval
async def test_in_edit_mode_a_long_code_block_is_cut_only_at_line_ends(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord
) -> None:
    lines = [f"value_{n:03d} = compute(value_{n - 1:03d}) + {n}" for n in range(1, 120)]
    text = "```python\n" + "\n".join(lines) + "\n```"
    reply = answer(text, pieces=len(text) // 5, gap=0.002)
    shown = await ask(
        tmp_path,
        llm_server,
        open_nextcord,
        reply,
        delivery=Delivery.EDIT,
        stream_edit_interval_ms=50,
    )
    assert len(shown) > 1
    code = [line for message in shown for line in message.split("\n") if "```" not in line]
    assert code == lines
    assert all(message.startswith("```python\n") for message in shown)


@pytest.mark.parametrize("delivery", [Delivery.MESSAGES, Delivery.EDIT])
@pytest.mark.parametrize(
    "span",
    [
        "||a hidden spoiler text here||",
        "[click here for the docs](https://docs.example.com/a/b/index.html)",
        "**this is some bold text here**",
    ],
)
async def test_a_span_at_the_message_limit_is_not_split_when_streamed_in_small_chunks(
    tmp_path: Path,
    llm_server: LLMServer,
    open_nextcord: OpenNextcord,
    delivery: Delivery,
    span: str,
) -> None:
    text = ("lorem ipsum dolor sit amet " * 80)[:1_935] + " " + span + " after."
    reply = answer(text, pieces=len(text) // 3)
    shown = await ask(
        tmp_path, llm_server, open_nextcord, reply, delivery=delivery, stream_edit_interval_ms=10
    )
    assert len(shown) == 2
    assert span in shown[0] or span in shown[1]


@pytest.mark.parametrize("delivery", [Delivery.EDIT])  # messages: tests/cog/test_discord_limits.py
async def test_a_12k_character_answer_arrives_whole(
    tmp_path: Path, llm_server: LLMServer, open_nextcord: OpenNextcord, delivery: Delivery
) -> None:
    """Seven messages' worth, more than the paragraphs' count would once have allowed: the
    ceiling counts what a user reads, so it all arrives, with no cut note."""
    text = "\n\n".join(f"Step {n}. " + "Do this, then check that. " * 18 for n in range(26))
    assert len(text) > 12_000
    shown = await ask(
        tmp_path,
        llm_server,
        open_nextcord,
        answer(text, pieces=120),
        delivery=delivery,
        stream_edit_interval_ms=10,
    )
    assert " ".join(shown).split() == text.split()
    assert all(len(message) <= 2_000 for message in shown)
    assert "cut here" not in shown[-1]
