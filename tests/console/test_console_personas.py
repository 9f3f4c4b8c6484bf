"""Rehearsing a cast in the console: `/tomori persona add`, then messages that name personas,
each answer printed under its persona's name (a session in this process, input piped)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import sqlite3
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.console_process import bot_environment
from tests.support.llm_server import LLMServer, Reply, hold_until
from tests.support.scripts import answer
from tests.support.waiting import until
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.console.session import ConsoleSession


async def piped(llm_server: LLMServer, tmp_path: Path, typed: str, **variables: str) -> str:
    """What a piped session prints for `typed`, once its input ends."""
    env = bot_environment(llm_server, tmp_path, **variables)
    reading, writing = os.pipe()
    os.write(writing, typed.encode())
    os.close(writing)
    out = io.StringIO()
    try:
        session = ConsoleSession(
            Settings.from_env(env), ModelChain.from_env(env), out, live=False, fd=reading
        )
        async with asyncio.timeout(15):
            assert await session.run() == 0
    finally:
        os.close(reading)
    return out.getvalue()


HELD = {"STREAM_FIRST_TOKEN_TIMEOUT_MS": "20000"}
"""A model the test holds back is no model that never starts: no timeout while it waits."""


def held(reply: Reply, until: asyncio.Event) -> Reply:
    """`reply`, begun once `until` is set."""
    return replace(reply, body=[hold_until(until), *reply.body])


def console_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the session makes its temporary folder, which holds its lock store."""
    folder = tmp_path / "temporary"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def counted(folder: Path, table: str) -> int:
    """How many rows `table` holds in the console session's own lock store."""
    (store,) = folder.glob("tomori-console-*/console.db")
    with contextlib.closing(sqlite3.connect(store)) as reader:
        return int(reader.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


async def set_once_queued(
    event: asyncio.Event, llm_server: LLMServer, folder: Path, *, lines: int, then_s: float = 0
) -> None:
    """Set `event` once the first line's turn asked its model and `lines` more are queued,
    and (`then_s`) the next line had that long to be sent: admitted, whether queued or refused
    (a line held back shows nothing, so only a bounded wait can see it was not sent)."""
    await until(
        lambda: len(llm_server.requests) == 1 and counted(folder, "queued_triggers") == lines
    )
    if then_s:
        with contextlib.suppress(TimeoutError):
            await until(lambda: counted(folder, "admitted_messages") > lines + 1, within=then_s)
    event.set()


async def test_personas_added_in_the_console_answer_under_their_names_each_seeing_the_last(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Plain bot."), answer("Aria sings."), answer("Bex claps."))
    typed = (
        "hello\n"
        "/tomori persona add Aria prompt:You are Aria, a bard.\n"
        "/tomori persona add Bex prompt:You are Bex. triggers:bex, drummer\n"
        "aria, then the drummer: play\n"
        "/tomori persona list\n"
    )
    out = await piped(llm_server, tmp_path, typed)
    assert "[tomori #2]\nPlain bot.\n" in out
    assert "Aria joined this server." in out
    assert (
        "[you #3] aria, then the drummer: play\n[Aria #4]\nAria sings.\n[Bex #5]\nBex claps.\n"
        in out
    )
    assert "**Bex**: called by bex, drummer" in out
    aria, bex = (request.body["messages"] for request in llm_server.requests[1:])
    assert aria[0] == {"role": "system", "content": "You are Aria, a bard."}
    assert "tomori: Plain bot." in aria[-1]["content"]  # the bot is another speaker to Aria
    assert bex[0]["content"] == "You are Bex."
    asked = bex[-1]["content"]  # Bex sees the question, then what Aria said to it
    assert asked.index("aria, then the drummer: play") < asked.index("Aria: Aria sings.")


async def test_a_sprite_added_in_the_console_prints_its_lines_under_its_name(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(
        answer("Hello.\nAria (happy): Hooray!\nAria (cross): stays as text."), answer("Yes.")
    )
    typed = (
        "/tomori persona add Aria prompt:You are Aria.\n"
        "/tomori sprite add Aria label:happy avatar:https://images.example/happy.png\n"
        "hi aria\n"
        "again, aria\n"
    )
    out = await piped(llm_server, tmp_path, typed)
    assert 'Aria can now show sprite "happy"' in out
    assert re.search(
        r"\[Aria #\d+\]\nHello.\n\[Aria \(happy\) #\d+\]\nHooray!\nAria \(cross\)", out
    )
    system = llm_server.requests[0].body["messages"][0]["content"]
    assert system.startswith("You are Aria.\n\nYou have alternate avatars")
    later = llm_server.requests[1].body["messages"]
    assert any(m["role"] == "assistant" and "Aria (happy): Hooray!" in m["content"] for m in later)


async def test_a_scene_in_the_console_prints_each_line_under_its_personas_name(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    lines = ["Aria sings.", "Bex drums.", "Aria bows.", "Bex bows."]
    llm_server.script(*(answer(line) for line in lines), answer("Plain bot."))
    typed = (
        "/tomori persona add Aria prompt:You are Aria, a bard.\n"
        "/tomori persona add Bex prompt:You are Bex.\n"
        "/scene Aria, Cy cycles:2\n"
        "/scene Aria, Bex cycles:2 instructions:a tavern duel\n"
        "who won?\n"
        "/tomori scenes off\n"
        "/scene Aria, Bex cycles:1\n"
    )
    out = await piped(llm_server, tmp_path, typed)
    assert "[No Scene] This server has no persona named Cy" in out
    assert (  # the line typed while the scene plays waits for it, then is answered
        "[you #1] /scene Aria, Bex cycles:2 instructions:a tavern duel\n[you #2] who won?\n"
        "[Aria #3]\nAria sings.\n[Bex #4]\nBex drums.\n[Aria #5]\nAria bows.\n[Bex #6]\nBex bows.\n"
        "[tomori #7, replying to #2]\nPlain bot.\n"
    ) in out
    assert "[No Scene] Scenes are off in this server" in out
    requests = [request.body["messages"] for request in llm_server.requests]
    assert len(requests) == 5
    third = requests[2]  # Aria's second line: its first as its own turn, Bex's named
    assert third[0] == {"role": "system", "content": "You are Aria, a bard."}
    assert {"role": "assistant", "content": "Aria sings."} in third
    assert third[-1]["content"].startswith("Bex: Bex drums.\n[Scene, cycle 2 of 2] You are Aria")
    assert "The scene: a tavern duel" in third[-1]["content"]
    assert "/scene" not in str(requests[4])  # a command is no message to a model
    assert "Bex: Bex bows." in requests[4][-1]["content"]  # the bot sees the scene


async def test_respond_in_the_console_answers_as_the_persona_asked_from_its_prefill(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Once upon a time."), answer(" the sea, the sea!"))
    typed = (
        "/tomori persona add Aria prompt:You are Aria, a bard.\n"
        "tell me a story\n"
        "/respond persona:Aria prompt:sing it instead prefill:Oh,\n"
        "/respond persona:Cy\n"
    )
    out = await piped(llm_server, tmp_path, typed)
    assert (  # as in Discord, the answer replies to no message: it answers the channel
        "[you #3] /respond persona:Aria prompt:sing it instead prefill:Oh,\n"
        "[Aria #4]\nOh, the sea, the sea!\n"
    ) in out
    assert "[Not Changed] This server has no persona named Cy." in out
    assert len(llm_server.requests) == 2  # the refused /respond reached no model
    sent = llm_server.requests[1].body["messages"]
    assert sent[0] == {"role": "system", "content": "You are Aria, a bard."}
    assert "/respond" not in str(sent)  # a command is no message to a model
    assert sent[-1] == {"role": "assistant", "content": "Oh,"}  # the prefill, to continue
    assert sent[-2]["content"] == (  # the channel as it stands, then what the asker said
        "user: tell me a story\ntomori: Once upon a time.\nuser: sing it instead"
    )


async def test_a_scene_in_the_console_counts_as_a_message_under_the_cooldown(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Hello there."), answer("Never played."))
    typed = (
        "/tomori persona add Aria prompt:You are Aria.\n"
        "/tomori persona add Bex prompt:You are Bex.\n"
        "/tomori limits cooldown_ms:60000\n"
        "hello\n"
        "/scene Aria, Bex cycles:1\n"
    )
    out = await piped(llm_server, tmp_path, typed)
    assert "Hello there." in out
    assert "Never played." not in out
    assert "[Slow Down, replying to #3]" in out
    assert len(llm_server.requests) == 1


async def test_the_authors_server_budget_holds_in_the_console_as_in_a_server(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Hello there."), answer("Never said."))
    out = await piped(llm_server, tmp_path, "hello\nand again\n", TOMORI_SERVER_DAILY_TOKENS="5")
    assert "Hello there." in out
    assert "Never said." not in out
    assert "[Daily Limit Reached, replying to #2] This server has used the tokens" in out
    assert len(llm_server.requests) == 1  # refused as it came, as a channel refuses it


async def test_a_prefill_set_without_text_asks_for_the_prefill(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    out = await piped(llm_server, tmp_path, "/tomori prefill set scope:server\n")
    assert "give what answers begin with" in out
    assert "system prompt" not in out


async def test_a_persona_with_its_own_models_begins_with_the_servers_prefill_as_in_a_channel(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """The console plays the cog's turn: a persona on a chain of its own still begins its
    answer with the server's prefill (the console's own copy of the turn used to drop it)."""
    llm_server.script(answer("sings."))
    typed = (
        "/tomori persona add Aria prompt:You are Aria. models:openai:aria-model\n"
        "/tomori prefill set scope:server text:*bows*\n"
        "hi aria\n"
    )
    out = await piped(llm_server, tmp_path, typed, TOMORI_ALLOWED_MODELS="*")
    (request,) = llm_server.requests
    assert request.body["model"] == "aria-model"
    assert request.body["messages"][-1] == {"role": "assistant", "content": "*bows*"}
    assert re.search(r"\[Aria #\d+\]\n\*bows\* ?sings\.", out), out


async def test_a_personas_own_prefill_begins_its_answers_in_the_console_as_in_a_channel(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """`/tomori persona add ... prefill:` in the console: the persona's answers begin with its
    own, not the server's; `persona list` shows it, and an empty `prefill:` clears it."""
    llm_server.script(answer(" sings."), answer(" claps."), answer(" hums."))
    typed = (
        "/tomori prefill set scope:server text:*yawns*\n"
        "/tomori persona add Aria prompt:You are Aria. prefill:*bows* deeply\n"
        "/tomori persona add Bex prompt:You are Bex.\n"
        "hi aria\n"
        "hi bex\n"
        "/tomori persona list\n"
        "/tomori persona edit Aria prefill:\n"
        "aria, once more\n"
    )
    out = await piped(llm_server, tmp_path, typed)
    assert re.search(r"\[Aria #\d+\]\n\*bows\* deeply sings\.", out), out
    assert re.search(r"\[Bex #\d+\]\n\*yawns\* claps\.", out), out
    assert (
        '**Aria**: called by Aria; the channel\'s models, no avatar; begins with "*bows* deeply"'
        in out
    )
    assert re.search(r"\[Aria #\d+\]\n\*yawns\* hums\.", out), out  # cleared: the server's
    aria, bex, again = (request.body["messages"] for request in llm_server.requests)
    assert aria[-1] == {"role": "assistant", "content": "*bows* deeply"}
    assert bex[-1] == {"role": "assistant", "content": "*yawns*"}
    assert again[-1] == {"role": "assistant", "content": "*yawns*"}


async def test_tools_lists_and_switches_the_consoles_tools_as_in_a_server(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    typed = (
        "/tomori tools\n/tomori tools current_time offered:off\n/tomori tools offered:maybe\n"
        "/tomori tools current_time off\n/tomori limits cooldown_ms:\uff15 scope:server\n"
        "/tomori persona\n/tomori scenes\n"
    )
    out = await piped(llm_server, tmp_path, typed)
    assert "[Tools in this channel] " in out
    assert "current_time" in out
    assert "Tool current_time" in out  # turned off, as the admin command says it
    assert "offered is on or off, not 'maybe': /tomori tools" in out
    # a name alone is never taken for a listing: the member typed what they wanted done
    assert "Give offered too: true to offer current_time off to the model" in out
    assert (  # a digit that is not ASCII is no number; the usage names the options there are
        "cooldown_ms='\uff15 scope:server' is not allowed: give a whole number from 0:"
        " /tomori limits [cooldown_ms:<n>] [daily_tokens:<n>]"
    ) in out
    assert "/tomori persona is not a subcommand" in out
    assert "give on or off: /tomori scenes on|off" in out
    assert llm_server.requests == []


async def test_a_queued_line_is_shown_the_answers_since_it_within_the_history_limit(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the cog reads a channel: the first `TOMORI_HISTORY_LIMIT` messages after a queued
    trigger, not every answer posted while it waited (a new user's burst of twelve lines sent
    the twelfth all eleven answers before). The first answer waits until the other lines are
    queued, so every line is in the channel before any answer, as in a burst."""
    folder = console_folder(tmp_path, monkeypatch)
    queued = asyncio.Event()
    llm_server.script(held(answer("answer 1"), queued), *(answer(f"answer {n}") for n in (2, 3, 4)))
    async with asyncio.TaskGroup() as meanwhile:
        meanwhile.create_task(set_once_queued(queued, llm_server, folder, lines=3))
        out = await piped(  # no summary: its fold would take a reply scripted for a turn
            llm_server,
            tmp_path,
            "m1\nm2\nm3\nm4\n",
            **HELD,
            TOMORI_HISTORY_LIMIT="2",
            TOMORI_SUMMARIES="0",
        )
    assert out == (
        "[you #1] m1\n[you #2] m2\n[you #3] m3\n[you #4] m4\n[tomori #5]\nanswer 1\n"
        "[tomori #6, replying to #2]\nanswer 2\n[tomori #7, replying to #3]\nanswer 3\n"
        "[tomori #8, replying to #4]\nanswer 4\n"
    )
    last = [m["content"] for m in llm_server.requests[-1].body["messages"][1:]]
    # two before the trigger, the first two after it (answer 3 is the third), then the trigger
    assert last == ["user: m2\nuser: m3", "answer 1\nanswer 2", "user: m4"]


async def test_a_script_longer_than_the_queue_has_every_line_answered_each_in_turn(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Piped, a line waits to be sent while `TOMORI_QUEUE_PER_MEMBER` of the script's lines
    wait for their answers, as its author would: read at once, the fifth line was refused as
    "Queue Full" whenever the model was slower than the reading (always, with a real one)."""
    folder = console_folder(tmp_path, monkeypatch)
    full = asyncio.Event()
    llm_server.script(held(answer("answer 1"), full), *(answer(f"answer {n}") for n in range(2, 6)))
    async with asyncio.TaskGroup() as meanwhile:  # the model answers once the queue is full
        waits = set_once_queued(full, llm_server, folder, lines=3, then_s=0.5)
        meanwhile.create_task(waits)
        out = await piped(llm_server, tmp_path, "".join(f"m{n}\n" for n in range(1, 6)), **HELD)
    assert "Queue Full" not in out
    said = [request.body["messages"][-1]["content"] for request in llm_server.requests]
    assert said == [f"user: m{n}" for n in range(1, 6)]
    line = {text: number for number, text in re.findall(r"\[you #(\d+)\] (m\d)\n", out)}
    assert list(line) == ["m1", "m2", "m3", "m4", "m5"]  # each shown once, in order
    replies = re.findall(r"\[tomori #\d+, replying to #(\d+)\]\nanswer (\d)\n", out)
    assert replies == [(line[f"m{n}"], str(n)) for n in range(2, 6)]  # each to its own line


async def test_an_edit_that_changes_nothing_is_refused_and_an_empty_option_clears(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    typed = (
        "/tomori persona add Aria prompt:You are Aria. triggers:bard, singer\n"
        "/tomori persona edit Aria\n"
        "/tomori persona list\n"
        "/tomori persona edit Aria prompt:\n"
        "/tomori persona edit Aria triggers:\n"
        "/tomori persona list\n"
    )
    out = await piped(llm_server, tmp_path, typed)
    assert "[Not Changed] Give what to change of Aria: its prompt, avatar, triggers, models" in out
    assert "**Aria**: called by bard, singer" in out  # nothing changed by the empty edit
    assert "[Not Changed] prompt: is given no value: /tomori persona edit" in out
    assert "**Aria**: called by Aria;" in out  # triggers cleared: its name calls it again
    assert not llm_server.requests


async def test_a_misspelt_option_is_named_not_taken_into_the_value_before_it(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("Still the bot's model."))
    typed = (
        "/tomori model openai:test-model scop:server\n"
        "/tomori limits cooldwn_ms:100\n"
        "/tomori prompt Note: be brief.\n"
        "/tomori model openai:test model\n"
        "hello\n"
    )
    out = await piped(llm_server, tmp_path, typed, TOMORI_ALLOWED_MODELS="*")
    assert "[Not Changed] scop: is no option here; did you mean scope:?" in out
    assert "[Not Changed] cooldwn_ms: is no option here; did you mean cooldown_ms:?" in out
    assert "System prompt for this channel set (15 characters)" in out  # its own colon
    assert "a model's name holds no spaces" in out
    sent = llm_server.requests[0].body
    assert (sent["model"], sent["messages"][0]["content"]) == ("test-model", "Note: be brief.")


async def test_a_persona_cannot_pass_for_the_bot_itself(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    out = await piped(llm_server, tmp_path, "/tomori persona add T0MORI prompt:I am the bot.\n")
    assert "[Not Changed] T0MORI would pass for the bot itself (tomori)." in out


async def test_a_persona_cannot_pass_for_the_consoles_one_member(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    out = await piped(llm_server, tmp_path, "/tomori persona add U5er prompt:I am you.\n")
    assert "[Not Changed] U5er would pass for a member of this server" in out
