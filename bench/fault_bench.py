"""The sixteen classic provider faults, each through the whole cog into a channel.

Run: `.venv/bin/python bench/fault_bench.py [--delivery messages edit]` (about 50 s a mode,
most of it waiting out the timeouts the faults are meant to trip).

A real nextcord bot with the cog (on the REST recorder of tests/support/nextcord_fake.py)
answers one question per fault, over a chain of two models, each on a local LLM server of its
own (tests/support/llm_server.py) spoken to by its real SDK: `openai:primary`, then
`gemini:fallback`. Its budgets are a user's interactive ones: 10 s for the first token and
10 s idle (`STREAM_FIRST_TOKEN_TIMEOUT_MS`, `STREAM_SDK_CALL_TIMEOUT_MS`), unscaled. The
primary's server plays the fault; a model asked to go on from a cut answer goes on from exactly
where the text it is shown stops, as a faithful model would, so the channel shows the whole
answer only if what it showed and what the model was told agree. One setting is scaled: a
sick model is probed again after 3 s (`TOMORI_MODEL_PROBE_INTERVAL_MS`, 30 s by default), so
that "primary down then back" need not wait half a minute.

For each fault it prints how long each turn took, what the channel finally shows (its
messages, joined, shortened in the middle; the titles of its notices), the requests each
model's server received, and a verdict: `whole answer`, or `notice, nothing false` (a notice
other than "Fallback Model Used", and the text shown is the answer's words from its start, a
word cut in half counting as false), or FAILED. It exits 1 if any fault failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.gemini_wire import api_error, response, text_part
from tests.support.llm_server import Action, LLMServer, Reply, SeenRequest, drop, pause, sse, stall
from tests.support.nextcord_fake import (
    CHANNEL_ID,
    NextcordBot,
    start_nextcord_bot,
    stop_nextcord_bot,
)
from tests.support.openai_wire import chunk, usage_chunk
from tests.support.waiting import until
from tomori.config.models import ModelChain
from tomori.config.settings import Delivery, Settings
from tomori.generation.chain import CONTINUE_NOTICE

ANSWER = (
    "Tides rise and fall twice a day.\n"
    "The moon pulls the sea toward it while the earth turns beneath.\n"
    "So each shore sees two high tides and two low ones.\n"
    "When the sun and the moon pull together, the tides run highest.\n"
    "When they pull at right angles, the tides run lowest."
)
WORDS = ANSWER.split(" ")
PIECES = [WORDS[0]] + [" " + word for word in WORDS[1:]]
"""The answer as the model streams it, a word at a time, each with the space before it (as
tokenizers cut text)."""
CUT_AFTER = PIECES.index(" each") + 1
"""Mid-answer faults strike after "So each": a word edit mode holds the "h" of (it may begin
"http"), so a writer that loses what it held shows "eac"."""
GAP_S = 0.01
SHOWN_S = 1.5
"""How long a mid-answer fault waits after its last word: edit mode shows what came."""
FALLBACK_USAGE = (30, 12)
FIRST_TOKEN_MS = IDLE_MS = 10_000
PROBE_INTERVAL_MS = 3_000
PRIMARY = "openai:primary"
FALLBACK = "gemini:fallback"


# -- what the models' servers send ----------------------------------------------------------


def openai_stream(pieces: list[str], *, ending: list[Action] | None = None) -> list[Action]:
    body: list[Action] = []
    for piece in pieces:
        body += [pause(GAP_S), sse(chunk(piece))]
    if ending is None:  # a whole answer ends so: its finish reason, its usage, [DONE]
        ending = [sse(chunk(finish="stop")), sse(usage_chunk(20, 40)), sse("[DONE]")]
    return body + ending


def openai_answer() -> Reply:
    return Reply(body=openai_stream(PIECES))


def cut_answer(*fault: Action) -> Reply:
    """The primary's answer up to `CUT_AFTER`, then `fault`."""
    return Reply(body=openai_stream(PIECES[:CUT_AFTER], ending=[pause(SHOWN_S), *fault]))


def gemini_answer(text: str) -> Reply:
    words = text.split(" ")
    body: list[Action] = []
    for piece in [words[0]] + [" " + word for word in words[1:]]:
        body += [pause(GAP_S), sse(response(text_part(piece)))]
    return Reply(body=[*body, sse(response(finish="STOP", usage=FALLBACK_USAGE))])


def openai_error(status: int, message: str, **fields: Any) -> Reply:
    return Reply(status=status, json_body={"error": {"message": message, **fields}})


def shown_to_fallback(request: SeenRequest) -> str | None:
    """The partial answer a Gemini request asks the model to go on from (the model's turn
    before the request's note to continue), or None when it asks afresh."""
    contents = request.body.get("contents") or []
    if len(contents) < 2 or CONTINUE_NOTICE not in text_of(contents[-1]):
        return None
    return text_of(contents[-2])


def text_of(content: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in content["parts"])


def faithful_fallback(request: SeenRequest) -> Reply:
    """A fallback that goes on from exactly where the text it is shown stops."""
    shown = shown_to_fallback(request)
    if shown is None:
        return gemini_answer(ANSWER)
    rest = ANSWER[len(shown) :] if ANSWER.startswith(shown) else ANSWER
    return gemini_answer(rest)


def refusing_prefill(request: SeenRequest) -> Reply:
    """A fallback that refuses a conversation ending in its own (prefilled) turn."""
    contents = request.body.get("contents") or []
    if contents and contents[-1]["role"] == "model":
        return Reply(400, json_body=api_error(400, "a conversation may not end in a model turn"))
    return faithful_fallback(request)


# -- the faults -------------------------------------------------------------------------------

Primary = Callable[[SeenRequest, int], Reply]
"""The primary's reply to its `n`th request of the fault (from 1)."""


def once(fault: Reply) -> Primary:
    return lambda request, n: fault if n == 1 else openai_answer()


def always(fault: Callable[[], Reply]) -> Primary:
    return lambda request, n: fault()


@dataclass
class Fault:
    name: str
    primary: Primary
    fallback: Callable[[SeenRequest], Reply] = faithful_fallback
    turns: int = 1
    """Questions asked in a row (`primary down then back` asks three)."""


CONTEXT_LENGTH = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9001 tokens. Please reduce the length of the messages."
)
CONTENT_FILTER = (
    "The response was filtered due to the prompt triggering Azure OpenAI's content management "
    "policy. Please modify your prompt and retry. To learn more about our content filtering "
    "policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"
)

FAULTS = [
    Fault(
        "429 with Retry-After",
        once(
            Reply(
                429, json_body={"error": {"message": "slow down"}}, headers=[("retry-after", "1")]
            )
        ),
    ),
    Fault("429 without Retry-After", always(lambda: openai_error(429, "slow down"))),
    Fault("500 once", once(openai_error(500, "internal error"))),
    Fault("503", always(lambda: openai_error(503, "overloaded"))),
    Fault("reset before headers", once(Reply(reset=True))),
    Fault("no response", always(lambda: Reply(header_delay=3600))),
    Fault("late first token", once(Reply(body=[pause(6.0), *openai_stream(PIECES)]))),
    Fault("stream cut", once(cut_answer(drop()))),
    Fault("stall", once(cut_answer(stall()))),
    Fault("malformed chunk", once(cut_answer(sse("{not json"), stall()))),
    Fault("no [DONE]", once(cut_answer())),
    Fault(
        "context-length 400",
        always(lambda: openai_error(400, CONTEXT_LENGTH, code="context_length_exceeded")),
    ),
    Fault(
        "content-filter 400",
        always(lambda: openai_error(400, CONTENT_FILTER, code="content_filter")),
    ),
    Fault("cut, fallback refuses prefill", once(cut_answer(drop())), fallback=refusing_prefill),
    Fault("primary down then back", always(openai_answer), turns=3),
    Fault("usage of the fallback", always(lambda: openai_error(500, "internal error"))),
]


# -- judging what the channel shows ---------------------------------------------------------


@dataclass
class Seen:
    """What one turn showed, and how long it took."""

    seconds: float
    messages: list[str]
    notices: list[str]
    descriptions: list[str]
    asked: list[str]
    """The model each request of the turn went to, primary's first."""


def judge(seen: Seen) -> tuple[bool, str]:
    words = " ".join(seen.messages).split()
    whole = ANSWER.split()
    if words == whole:
        return True, "whole answer"
    told = [title for title in seen.notices if title != "Fallback Model Used"]
    if words == whole[: len(words)]:
        if told:
            return True, f"notice, nothing false ({len(words)} of {len(whole)} words shown)"
        return False, f"FAILED: {len(words)} of {len(whole)} words shown as a whole answer"
    pairs = enumerate(zip(words, whole, strict=False))
    wrong = next((n for n, (word, right) in pairs if word != right), None)
    if wrong is None:  # the whole answer, and more after it
        return False, f"FAILED: {len(words) - len(whole)} words more than the answer"
    return False, f"FAILED: shows {words[wrong]!r} where the answer has {whole[wrong]!r}"


def shortened(text: str, keep: int = 28) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 2 * keep + 3 else f"{flat[:keep]}...{flat[-keep:]}"


# -- running one fault ------------------------------------------------------------------------


class NoPatch:
    def setattr(self, target: Any, name: str, value: Any) -> None:
        setattr(target, name, value)


async def run_fault(fault: Fault, delivery: Delivery, folder: Path) -> tuple[list[Seen], list[str]]:
    """Ask the fault's questions of a fresh bot; what each turn showed, and notes."""
    count = {"n": 0}

    def primary(request: SeenRequest) -> Reply:
        count["n"] += 1
        return fault.primary(request, count["n"])

    primary_server = LLMServer(default=primary)
    fallback_server = LLMServer(default=fault.fallback)
    await primary_server.start()
    await fallback_server.start()
    port = primary_server.port
    db_path = folder / f"{delivery}-{fault.name.replace(' ', '-')}.db"
    settings = Settings(
        db_path=db_path,
        delivery=delivery,
        stream_first_token_timeout_ms=FIRST_TOKEN_MS,
        stream_sdk_call_timeout_ms=IDLE_MS,
        model_probe_interval_ms=PROBE_INTERVAL_MS,
        follow_ups=False,
    )
    chain = ModelChain.from_env(
        {
            "TOMORI_MODELS": f"{PRIMARY},{FALLBACK}",
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": f"{primary_server.base_url}/v1",
            "GEMINI_API_KEY": "gemini-bench",
            "GEMINI_BASE_URL": fallback_server.base_url,
        }
    )
    down = fault.name == "primary down then back"
    if down:
        await primary_server.close()  # nothing listens: every connection is refused
    bot = await start_nextcord_bot(settings, chain, NoPatch())
    notes: list[str] = []
    turns: list[Seen] = []
    try:
        for turn in range(fault.turns):
            if down and turn == 1:
                await primary_server.start(port)  # back, on the address the chain names
            if down and turn == 2:
                notes.append(f"probed well again after {await probed_well(db_path):.1f} s")
            shown_before, told_before = len(bot.discord.contents()), len(embeds_of(bot))
            asked_before = len(primary_server.requests), len(fallback_server.requests)
            started = time.monotonic()
            bot.say(f"{bot.mention()} why are there two tides a day?")
            await bot.settled()
            took = time.monotonic() - started
            embeds = embeds_of(bot)[told_before:]
            asked = ["primary"] * (len(primary_server.requests) - asked_before[0])
            asked += ["fallback"] * (len(fallback_server.requests) - asked_before[1])
            turns.append(
                Seen(
                    took,
                    bot.discord.contents()[shown_before:],
                    [embed.get("title", "") for embed in embeds],
                    [embed.get("description", "") for embed in embeds],
                    asked,
                )
            )
        if fault.name == "usage of the fallback":
            notes.append(await recorded_usage(db_path))
    finally:
        await stop_nextcord_bot(bot)
        await primary_server.close()
        await fallback_server.close()
    return turns, notes


def embeds_of(bot: NextcordBot) -> list[dict[str, Any]]:
    """The bot's notices in the channel, oldest first."""
    bot_id = bot.discord.bot_user["id"]
    return [
        embed
        for message in bot.discord.messages.get(CHANNEL_ID, [])
        if message["author"]["id"] == bot_id
        for embed in message["embeds"]
    ]


async def probed_well(db_path: Path) -> float:
    """Seconds until the probe found the primary answering (its row gone from model_health)."""
    started = time.monotonic()
    await until(lambda: not rows(db_path, "SELECT 1 FROM model_health WHERE model = ?", (PRIMARY,)))
    return time.monotonic() - started


async def recorded_usage(db_path: Path) -> str:
    """The tokens the database recorded for each model of the turn."""
    query = "SELECT model, SUM(input_tokens), SUM(output_tokens) FROM token_usage GROUP BY model"
    await until(lambda: bool(rows(db_path, query, ())))
    found = rows(db_path, query, ())
    return "usage recorded: " + ", ".join(f"{m} {i} in / {o} out" for m, i, o in found)


def rows(db_path: Path, query: str, parameters: tuple[Any, ...]) -> list[Any]:
    with contextlib.closing(sqlite3.connect(db_path)) as connection:
        return connection.execute(query, parameters).fetchall()


def extra_checks(fault: Fault, turns: list[Seen], notes: list[str]) -> str | None:
    """What a fault asks beyond the channel: None if it holds, else what failed."""
    last = turns[-1]
    if fault.name == "content-filter 400":
        if "fallback" in last.asked:
            return "the fallback was asked"
        if not any(told.endswith("content management policy.") for told in last.descriptions):
            return "the provider's reason is not shown"
    if fault.name == "primary down then back":  # (a refused connection is no request)
        asked = [turn.asked for turn in turns]
        if asked != [["fallback"], ["fallback"], ["primary"]]:
            return f"asked {asked}: not the fallback while down and skipped, then the primary"
    if fault.name == "usage of the fallback":
        wanted = f"{FALLBACK} {FALLBACK_USAGE[0]} in / {FALLBACK_USAGE[1]} out"
        if notes[-1] != f"usage recorded: {wanted}":
            return f"{notes[-1]}, not {wanted} alone"
    return None


def verdict(fault: Fault, turns: list[Seen], notes: list[str]) -> tuple[bool, str]:
    """Every turn judged (`judge`), then what the fault asks beyond the channel."""
    for turn in turns:
        ok, said = judge(turn)
        if not ok:
            return ok, said
    problem = extra_checks(fault, turns, notes)
    return (True, said) if problem is None else (False, f"FAILED: {problem}")


async def main(deliveries: list[Delivery]) -> int:
    logging.basicConfig(level=logging.CRITICAL)  # the faults' warnings are the point, not news
    failed = 0
    print(
        f"{len(FAULTS)} provider faults through the cog, chain {PRIMARY} then {FALLBACK}; "
        f"first-token and idle budgets {FIRST_TOKEN_MS / 1000:g} s, probe interval "
        f"{PROBE_INTERVAL_MS / 1000:g} s (scaled from 30 s)"
    )
    indent = " " * 34
    with tempfile.TemporaryDirectory() as folder:
        for delivery in deliveries:
            print(f"\n{delivery} delivery (seconds per turn, what the channel shows)")
            for fault in FAULTS:
                turns, notes = await run_fault(fault, delivery, Path(folder))
                ok, said = verdict(fault, turns, notes)
                failed += not ok
                took = " + ".join(f"{turn.seconds:.2f}" for turn in turns)
                last = turns[-1]
                told = ", ".join(last.notices) or "no notice"
                shown = shortened(" ".join(last.messages))
                print(f"  {fault.name:<30} {took:>20} s  {said}")
                asked = " + ".join("/".join(turn.asked) or "none" for turn in turns)
                print(f"{indent}{len(last.messages)} message(s) {shown!r}; {told}")
                print(f"{indent}requests: {asked}")
                if fault.name == "content-filter 400":
                    notes += last.descriptions
                for note in notes:
                    print(f"{indent}{note}")
    print(f"\n{failed} of {len(FAULTS) * len(deliveries)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--delivery", nargs="+", choices=[d.value for d in Delivery], default=["messages", "edit"]
    )
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main([Delivery(value) for value in arguments.delivery])))
