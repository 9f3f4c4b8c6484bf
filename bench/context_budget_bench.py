"""Measure the context budget: a long history's request against each model's budget, and the
fitter's time against a turn's.

Run: `.venv/bin/python bench/context_budget_bench.py` (about half a minute).

First, in process: histories of 20 to 1,000 messages (members chatting in English and in
Japanese, one message in ten carrying a 3,000-character file), a system prompt and a trigger,
fitted to three context sizes (2,000 tokens given by `+context`, Ollama's 4,096, and the
32,768 of OpenAI's own API) as `ContextBook` fits them before any ratio is learned. Printed,
per history and size: the request's tokens before fitting, after it (our estimate, and the
test server's own count, `tests/support/token_window.py`, which counts differently) against
the room, the messages left out and the files cut, and the fitter's median time.

Then through the cog: a real nextcord bot with the cog on the REST recorder, its model a local
server holding 2,000 tokens that reports each request's tokens as usage, a channel of 200 long
messages; 20 turns, each a mention answered. Printed: each turn's median time from the mention
to the answer posted, the fitter's median time within it, and the largest request the server
counted against its 2,000.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.llm_server import LLMServer
from tests.support.nextcord_fake import BOB, start_nextcord_bot, stop_nextcord_bot
from tests.support.scripts import counted_answer
from tests.support.token_window import wire_tokens
from tomori.config.models import ModelChain, ModelEntry
from tomori.config.settings import DEFAULT_SYSTEM_PROMPT, Settings, ShowProgress
from tomori.generation.contexts import ContextBook
from tomori.prompt.budget import Fitted
from tomori.prompt.tokens import request_tokens
from tomori.providers.base import ContextItem, Role, StreamRequest

ENGLISH = "did anyone see the match last night? the second half was something else, honestly"
JAPANESE = "昨日の試合見た。後半はすごかったね、本当に。また来週も一緒に見ようよ"
FILE = "".join(f"row {n}: sensor reading 0.{n:04d}, status ok\n" for n in range(80))[:3_000]
SIZES = (
    ("openai:small+context=2000", "its +context"),
    ("openai:llama3.2", "Ollama's default"),
    ("openai:gpt-4o-mini", "OpenAI's own API"),
)


def history(length: int) -> tuple[ContextItem, ...]:
    """`length` messages of two members and the bot, one in ten with a file."""
    items = []
    for n in range(length):
        if n % 3 == 2:
            items.append(ContextItem(Role.ASSISTANT, f"({n}) {ENGLISH}"))
            continue
        said = f"{'bob' if n % 2 else 'alice'}: ({n}) {JAPANESE if n % 4 == 1 else ENGLISH}"
        if n % 10 == 0:
            text = f"{said}\n  [file data.csv]\n  {FILE.replace(chr(10), chr(10) + '  ')}"
            items.append(ContextItem(Role.USER, text, files_at=len(said) + 1))
        else:
            items.append(ContextItem(Role.USER, said))
    return tuple(items)


def request(length: int) -> StreamRequest:
    trigger = ContextItem(Role.USER, "alice: @Tomori what did we decide?", pinned=True)
    context = (ContextItem(Role.SYSTEM, DEFAULT_SYSTEM_PROMPT), *history(length), trigger)
    return StreamRequest(model="", context=context)


def server_count(sent: StreamRequest) -> int:
    messages = [{"role": str(item.role), "content": item.text} for item in sent.context]
    return wire_tokens({"messages": messages})


def in_process() -> None:
    print("requests fitted to each context (tokens: ours / the test server's, against the room)")
    settings = Settings()
    for length in (20, 100, 500, 1_000):
        whole = request(length)
        print(
            f"  {length:>5} messages: {request_tokens(whole):>6} tokens before fitting "
            f"({server_count(whole)} by the server's count)"
        )
        for written, name in SIZES:
            entry = ModelChain.parse(written, {"OPENAI_API_KEY": "k"}).entries[0]
            elsewhere = () if name == "OpenAI's own API" else ("openai",)
            book = ContextBook(settings, elsewhere)
            fit, took = timed(book, entry, whole)
            budget = book.budget(entry)
            print(
                f"    {budget.context_tokens:>6} ({name}): {fit.tokens:>6} / "
                f"{server_count(fit.request):>6} in a room of {budget.room:>6}; "
                f"{fit.left_out} left out, {fit.cut} files cut; fitted in {took * 1000:.2f} ms"
            )


def timed(book: ContextBook, entry: ModelEntry, whole: StreamRequest) -> tuple[Fitted, float]:
    times = []
    fit = None
    for _ in range(15):
        began = time.perf_counter()
        fit = book.fitted(entry, whole)
        times.append(time.perf_counter() - began)
    assert fit is not None
    return fit, statistics.median(times)


class NoPatch:
    def setattr(self, target: Any, name: str, value: Any) -> None:
        setattr(target, name, value)


async def through_the_cog(turns: int = 20) -> None:
    server = LLMServer(default=counted_answer("Noted."), context_tokens=2_000)
    await server.start()
    fitting: list[float] = []
    fitted = ContextBook.fitted

    def measured(self: ContextBook, entry: ModelEntry, request: StreamRequest) -> Fitted:
        began = time.perf_counter()
        try:
            return fitted(self, entry, request)
        finally:
            fitting.append(time.perf_counter() - began)

    ContextBook.fitted = measured  # type: ignore[method-assign]
    chain = ModelChain.from_env(
        {
            "TOMORI_MODELS": "openai:bench+context=2000",
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": f"{server.base_url}/v1",
        }
    )
    taken = []
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            db_path=Path(folder) / "budget.db", history_limit=200, progress=ShowProgress.OFF
        )
        bot = await start_nextcord_bot(settings, chain, NoPatch())
        try:
            for n in range(200):
                bot.say(f"({n}) {ENGLISH} {JAPANESE}", author=BOB, name="bob")
            await bot.settled()
            for turn in range(turns):
                began = time.perf_counter()
                bot.say(f"{bot.mention()} question {turn}")
                await bot.settled()
                taken.append(time.perf_counter() - began)
        finally:
            await stop_nextcord_bot(bot)
            await server.close()
            ContextBook.fitted = fitted  # type: ignore[method-assign]
    refused = sum(1 for tokens in server.counted if tokens > 2_000)
    print(
        f"through the cog, {turns} turns over 200 long messages, a model of 2,000 tokens\n"
        f"  a turn, mention to answer posted: median {statistics.median(taken) * 1000:.1f} ms\n"
        f"  the fitter within it: median {statistics.median(fitting) * 1000:.2f} ms "
        f"({statistics.median(fitting) / statistics.median(taken):.1%} of the turn)\n"
        f"  {len(server.requests)} requests, {refused} refused; the largest "
        f"{max(server.counted)} tokens by the server's count, of 2,000"
    )


if __name__ == "__main__":
    in_process()
    asyncio.run(through_the_cog())
