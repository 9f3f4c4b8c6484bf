"""N channels mention the bot at once, against a Discord that enforces its rate limits.

Run: `.venv/bin/python bench/discord_limits_bench.py --library nextcord --mode messages
--channels 10 50 --processes 1` (each run lasts until every answer is in, or the deadline).

This process runs the faithful Discord REST server (tests/support/discord_rest.py: a global
limit of 50 requests per second per token, 5-per-5-s buckets per channel for creates, edits
and typing, Discord's headers and 429 bodies, the invalid-request ban), and starts the local
LLM server in a process of its own, answering every request with the same ~1,200 characters
in six paragraphs, streamed in 6 s. It then starts `--processes` bot processes
(bench/discord_limits_worker.py) of the chosen library, on one bot token and one database,
sharing the N channels between them. Each bot has just connected (its `on_ready` came), and
`--start` says how the channels stand: `new` (nothing was ever said in them: no history read),
`earlier` (each holds a message from before the bot connected: each first turn reads the
history over REST) or `warm` (the bot served them before). All N mentions arrive at once.

Per run it prints what Discord counted (429s by scope and by route, invalid requests per
10 minutes extrapolated from the run, requests per second of the whole token on average and
in the busiest second, requests per answer) and what users saw: the first text of each
answer after the mention (p50, p99), the time the whole answer stood in the channel as a
multiple of the model's 6 s (p50, p99), answers complete, partial (some text) or lost (none)
at the deadline, and the bot processes' event-loop lag p99 (the worst process). An answer
needs at least two requests once it streams, so N answers need at least 2N/50 s of the global
limit: the bound is printed, and the time the last answer was complete against the larger of
the bound and the model's time. Tighter, and as physical: an answer's last text exists only once
its model has finished (all at once here, after 6 s), and the N last texts need N/50 s of the
global limit after that; the floor max(2N/50, 6 + N/50) s is printed too.

`--progress reactions` has each mention show its turn's progress as the bot's reactions
(`TOMORI_PROGRESS`; off by default, as the runs recorded before it): the model's 6 s show 💭
on every mention, taken down once answered, two reactions an answer on top of its text. The
report then says how many marks were still on a mention when the run ended (none should be).

Each answer's buttons change once it ends, behind every other request (`DiscordPacing.tidy`):
its Stop button taken off its first message, its take buttons (◀ 1/1 ▶ Regenerate) put on its
last. A worker waits for those edits too (bounded by `TIDY_WITHIN_S` and a margin) before it
reports, so they are in the requests counted (and any 429 they meet); the report says how many
component edits Discord took, how many Stop buttons were left on answers and how many answers
lack their take buttons (none should), and when the last edit landed. An answer is complete
when its text was (`ChannelMessage.text_at`): a later edit of its buttons alone does not move
that time.

`--llmcord PATH` runs llmcord's bot (one process, discord.py, its default embeds) from a
checkout at PATH through the same harness at each `--channels` (bench/llmcord_worker.py); the
bench fetches nothing, and without the path that row is skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.discord_rest import DiscordRestServer
from tests.support.llm_server import Action, LLMServer, Reply, SeenRequest, at, sse
from tests.support.openai_wire import chunk
from tests.support.rest_bots import declare_world, rest_server
from tests.support.world import BOT_ID
from tomori.turns.takes import CUSTOM_ID_PREFIX as TAKE_PREFIX
from tomori_cog.pacing import TIDY_WITHIN_S
from tomori_cog.stop_buttons import CUSTOM_ID_PREFIX as STOP_PREFIX

HERE = Path(__file__).resolve().parent
WORKER = "discord_limits_worker.py"
LLMCORD_WORKER = "llmcord_worker.py"
MODEL_SECONDS = 6.0
CHUNKS = 120
PARAGRAPHS = 6
FIRST_CHANNEL = 4_000_000_000_000_100_000
SENTENCE = "the sea is wide and the tide comes in slowly over the grey stones of the bay"
WORDS = SENTENCE.split(" ")


def answer_text() -> str:
    """About 1,200 characters in six paragraphs of words."""
    paragraphs = []
    for p in range(PARAGRAPHS):
        words = [WORDS[(p * 7 + n) % len(WORDS)] for n in range(38)]
        paragraphs.append(" ".join(words).capitalize() + ".")
    return "\n\n".join(paragraphs)


ANSWER = answer_text()


def streamed_answer(request: SeenRequest) -> Reply:
    """ANSWER in CHUNKS pieces over MODEL_SECONDS, the first at once, each on its schedule
    from the stream's start (so the model's time is what it says, however busy the server)."""
    size = -(-len(ANSWER) // CHUNKS)
    pieces = [ANSWER[start : start + size] for start in range(0, len(ANSWER), size)]
    gap = MODEL_SECONDS / len(pieces)
    body: list[Action] = []
    for number, piece in enumerate(pieces):
        if number:
            body.append(at(number * gap))
        body.append(sse(chunk(piece)))
    return Reply(body=[*body, sse(chunk(finish="stop")), sse("[DONE]")])


async def serve_llm() -> None:
    """The LLM server of the bench, in this process: prints its port, serves until stdin
    closes."""
    server = LLMServer(default=streamed_answer)
    await server.start()
    print(server.port, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await server.close()


def percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


STARTS = {
    "new": "nothing was ever said in them, so the bot reads no history",
    "earlier": "each holds a message from before, so each channel's first turn reads its "
    "history over REST once",
    "warm": "the bot served them before: it saw a chat line in each and read the history then "
    "(outside the counts), so the burst needs no history read",
}
"""How the channels stand when the burst comes, the bot just connected (`--start`)."""


def _squeezed(text: str) -> str:
    return "".join(text.split())


async def one_run(
    library: str,
    mode: str,
    channels_n: int,
    processes: int,
    deadline: float,
    llm_url: str,
    start: str = "new",
    memory_channels: int | None = None,
    llmcord: str | None = None,
    progress: str = "off",
) -> dict[str, Any]:
    """One run; with `llmcord` (a checkout's path), llmcord's bot instead of the cog's."""
    channels = [FIRST_CHANNEL + n for n in range(channels_n)]
    server: DiscordRestServer = rest_server()
    await server.start()
    declare_world(server, channels)
    workers = []
    logs = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            for number in range(processes):
                config = {
                    "library": library,
                    "mode": mode,
                    "api_base": server.api_base,
                    "token": server.token,
                    "llm_url": llm_url,
                    "db_path": str(Path(folder) / "tomori.db"),
                    "channels": channels[number::processes],
                    "deadline": deadline,
                    "start": start,
                    **({} if memory_channels is None else {"memory_channels": memory_channels}),
                    "processes": processes,
                    "progress": progress,
                    **({} if llmcord is None else {"llmcord": llmcord}),
                }
                log = open(Path(folder) / f"worker-{number}.log", "w+b")  # noqa: SIM115, ASYNC230
                logs.append(log)
                workers.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        str(HERE / (WORKER if llmcord is None else LLMCORD_WORKER)),
                        json.dumps(config),
                        stdin=asyncio.subprocess.PIPE,
                        stdout=asyncio.subprocess.PIPE,
                        stderr=log,
                    )
                )
            for worker in workers:
                assert worker.stdout is not None
                line = await asyncio.wait_for(worker.stdout.readline(), 60)
                if line.strip() != b"ready":
                    raise RuntimeError(f"a worker did not start: {_tail(logs)}")
            logins = server.requests
            before = Counter(server.requests_by_route)  # logins, and a warm bot's reads
            began = time.monotonic()
            for worker in workers:
                assert worker.stdin is not None
                worker.stdin.write(b"go\n")
                await worker.stdin.drain()
            if llmcord is not None:  # llmcord cannot say it is idle: stop it once all is shown
                await _all_answered(server, channels, began + deadline)
                for worker in workers:
                    assert worker.stdin is not None
                    worker.stdin.write(b"stop\n")
                    await worker.stdin.drain()
            reports = []
            for worker in workers:
                assert worker.stdout is not None
                line = await asyncio.wait_for(
                    worker.stdout.readline(), deadline + TIDY_WITHIN_S + 60
                )
                if not line:
                    raise RuntimeError(f"a worker stopped: {_tail(logs)}")
                reports.append(json.loads(line))
            ended = time.monotonic()
            for worker in workers:
                await asyncio.wait_for(worker.wait(), 60)
    finally:
        for log in logs:
            log.close()
        await server.close()
    return figures(server, channels, began, ended, reports, logins, before, buttons=llmcord is None)


async def _all_answered(server: DiscordRestServer, channels: list[int], until: float) -> None:
    """Return once every channel shows the whole answer, or at `until`."""
    expected = _squeezed(ANSWER)
    while time.monotonic() < until:
        if all(_squeezed(shown_answer(server, channel)) == expected for channel in channels):
            return
        await asyncio.sleep(0.1)


def _answers(server: DiscordRestServer, channel: int) -> list[Any]:
    """The bot's messages in `channel` after its last question that show any text."""
    shown = server.messages(channel)
    asked = [n for n, m in enumerate(shown) if m.author_id != BOT_ID]
    if not asked:  # (not asked yet)
        return []
    return [m for m in shown[asked[-1] + 1 :] if m.author_id == BOT_ID and _text(m)]


def _text(message: Any) -> str:
    """What a message shows: its content, or its embeds' descriptions (llmcord's answers)."""
    embeds = message.payload.get("embeds") or []
    return message.content or "".join(embed.get("description") or "" for embed in embeds)


def _buttons(message: Any, prefix: str) -> int:
    """How many of the message's buttons have a custom id starting with `prefix`."""
    rows = message.payload.get("components") or []
    return sum(
        str(button.get("custom_id") or "").startswith(prefix)
        for row in rows
        for button in row.get("components") or []
    )


def shown_answer(server: DiscordRestServer, channel: int) -> str:
    return "".join(_text(m) for m in _answers(server, channel))


def _tail(logs: list[Any]) -> str:
    text = []
    for log in logs:
        log.seek(0)
        text.append(log.read().decode(errors="replace")[-2000:])
    return "\n".join(text)


def figures(
    server: DiscordRestServer,
    channels: list[int],
    began: float,
    ended: float,
    reports: list[dict[str, Any]],
    logins: int,
    before: Counter[str],
    *,
    buttons: bool = True,
) -> dict[str, Any]:
    """What the run counted; with `buttons` (the cog's bot), the answers' buttons too."""
    expected = _squeezed(ANSWER)
    first_text: list[float] = []
    completion: list[float] = []
    complete = partial = lost = 0
    marks_left = stop_left = untaken = 0
    for channel in channels:
        asked = [m for m in server.messages(channel) if m.author_id != BOT_ID][-1]
        marks_left += bool(server.reactions_on(asked.id))
        answers = _answers(server, channel)
        stop_left += sum(bool(_buttons(m, STOP_PREFIX)) for m in answers)
        if not answers:
            lost += 1
            continue
        untaken += not _buttons(answers[-1], TAKE_PREFIX)
        first_text.append(min(m.created_at for m in answers) - asked.created_at)
        if _squeezed(shown_answer(server, channel)) == expected:
            complete += 1
            completion.append(max(m.text_at for m in answers) - asked.created_at)
        else:
            partial += 1
    bot_messages = [m for c in channels for m in server.messages(c) if m.author_id == BOT_ID]
    last_change = max((m.changed_at for m in bot_messages), default=None)
    seconds = ended - began
    n = len(channels)
    bound = 2 * n / server.global_limit
    floor = max(bound, MODEL_SECONDS + n / server.global_limit)
    all_done = max(completion) if complete == n else None
    requests = server.requests - logins
    return {
        "channels": n,
        "global_429": server.rate_limited["global"],
        "route_429": dict(server.rate_limited_by_route),
        "user_429": server.rate_limited["user"],
        "shared_429": server.rate_limited["shared"],
        "invalid_per_10_min": round(server.invalid_total * 600 / seconds),
        "banned": server.banned,
        "requests_per_second": round(requests / seconds, 1),
        "busiest_second": server.busiest_second(),
        "requests_per_answer": round(requests / n, 1),
        "requests_by_route": dict(server.requests_by_route - before),
        "first_text_p50_s": percentile(first_text, 0.5),
        "first_text_p99_s": percentile(first_text, 0.99),
        "completion_p50_x": _ratio(percentile(completion, 0.5)),
        "completion_p99_x": _ratio(percentile(completion, 0.99)),
        "complete": complete,
        "partial": partial,
        "lost": lost,
        "lag_p99_ms": max(report["lag_p99_ms"] for report in reports),
        "reactions": (server.requests_by_route - before)["reaction"],
        "marks_left": marks_left,
        "component_edits": server.component_edits if buttons else None,
        "stop_buttons_left": stop_left if buttons else None,
        "answers_without_take_buttons": untaken if buttons else None,
        "tidied": all(report.get("tidied", True) for report in reports),
        "last_change_s": None if last_change is None else last_change - began,
        "bound_s": bound,
        "all_done_s": all_done,
        "all_done_vs_bound": None if all_done is None else all_done / max(bound, MODEL_SECONDS),
        "floor_s": floor,
        "all_done_vs_floor": None if all_done is None else all_done / floor,
        "run_s": seconds,
    }


def _ratio(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / MODEL_SECONDS


def _fmt(value: Any, unit: str = "", digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


def report(library: str, mode: str, processes: int, run: dict[str, Any], start: str) -> str:
    routes = ", ".join(f"{k} {v}" for k, v in sorted(run["route_429"].items())) or "none"
    return "\n".join(
        [
            f"{library}, {mode}, {run['channels']} channels, {processes} process(es)"
            f", {start} channels: {run['run_s']:.1f} s",
            f"  429s: global {run['global_429']}, per route {run['user_429']}, "
            f"shared {run['shared_429']}; by route: {routes}; invalid requests per 10 min "
            f"{run['invalid_per_10_min']}{' BANNED' if run['banned'] else ''}",
            f"  requests/s {run['requests_per_second']} average, {run['busiest_second']} in the "
            f"busiest second; {run['requests_per_answer']} per answer "
            f"({', '.join(f'{k} {v}' for k, v in sorted(run['requests_by_route'].items()))})",
            f"  first text p50 {_fmt(run['first_text_p50_s'], ' s')}, "
            f"p99 {_fmt(run['first_text_p99_s'], ' s')}; "
            f"complete p50 {_fmt(run['completion_p50_x'], 'x')}, "
            f"p99 {_fmt(run['completion_p99_x'], 'x')} of the model's {MODEL_SECONDS:.0f} s",
            f"  answers complete {run['complete']}, partial {run['partial']}, "
            f"lost {run['lost']}; event-loop lag p99 {run['lag_p99_ms']:.1f} ms; "
            f"reactions {run['reactions']}, marks left on mentions {run['marks_left']}",
            f"  component edits {_fmt(run['component_edits'])}, Stop buttons left "
            f"{_fmt(run['stop_buttons_left'])}, answers without their take buttons "
            f"{_fmt(run['answers_without_take_buttons'])}; the last edit landed at "
            f"{_fmt(run['last_change_s'], ' s', 1)}"
            f"{'' if run['tidied'] else ' (the tidy-ups outlasted their wait)'}",
            f"  bound 2N/50 = {run['bound_s']:.1f} s; all complete at "
            f"{_fmt(run['all_done_s'], ' s', 1)} = "
            f"{_fmt(run['all_done_vs_bound'], 'x')} of max(bound, model time); "
            f"floor max(2N/50, model + N/50) = {run['floor_s']:.1f} s, "
            f"{_fmt(run['all_done_vs_floor'], 'x')} of it",
        ]
    )


async def main(args: argparse.Namespace) -> None:
    llm = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--serve-llm",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert llm.stdout is not None
    assert llm.stdin is not None
    port = int(await llm.stdout.readline())
    try:
        for library in args.library:
            for mode in args.mode:
                for processes in args.processes:
                    for start in args.start:
                        for n in args.channels:
                            run = await one_run(
                                library,
                                mode,
                                n,
                                processes,
                                args.deadline,
                                f"http://127.0.0.1:{port}",
                                start,
                                args.memory_channels,
                                progress=args.progress,
                            )
                            print(report(library, mode, processes, run, start), flush=True)
                            if args.json:
                                print(json.dumps({"library": library, "mode": mode, **run}))
        if args.llmcord is not None:
            for n in args.channels:
                run = await one_run(
                    "discordpy",
                    "llmcord",
                    n,
                    1,
                    args.deadline,
                    f"http://127.0.0.1:{port}",
                    llmcord=str(args.llmcord.resolve()),
                )
                print(report("llmcord (discord.py)", "embeds", 1, run, "new"), flush=True)
                if args.json:
                    print(json.dumps({"library": "llmcord", "mode": "embeds", **run}))
    finally:
        llm.stdin.close()
        await llm.wait()


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--library", nargs="+", default=["nextcord"], choices=["nextcord", "discordpy"]
    )
    parser.add_argument("--mode", nargs="+", default=["messages"], choices=["messages", "edit"])
    parser.add_argument("--channels", nargs="+", type=int, default=[10, 50])
    parser.add_argument("--processes", nargs="+", type=int, default=[1])
    parser.add_argument("--deadline", type=float, default=75.0, help="seconds a run may last")
    parser.add_argument("--json", action="store_true", help="also print each run as JSON")
    parser.add_argument(
        "--start",
        nargs="+",
        default=["new"],
        choices=list(STARTS),
        help="how the channels stand when the bot has just connected: "
        + "; ".join(f"{name}: {what}" for name, what in STARTS.items()),
    )
    parser.add_argument("--warm", action="store_true", help="the same as --start warm")
    parser.add_argument(
        "--memory-channels",
        type=int,
        help="TOMORI_HISTORY_MEMORY_CHANNELS of the bots (default: the setting's default)",
    )
    parser.add_argument(
        "--llmcord",
        type=Path,
        help="an llmcord checkout (the folder holding llmcord.py): also run llmcord's bot, "
        "one process, at each --channels (it needs PyYAML, python-dotenv and httpx); "
        "without it, that row is skipped",
    )
    parser.add_argument(
        "--progress",
        default="off",
        choices=["reactions", "off"],
        help="TOMORI_PROGRESS of the bots: reactions shows each turn's progress on its mention",
    )
    parser.add_argument("--serve-llm", action="store_true", help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    if parsed.warm:
        parsed.start = ["warm"]
    return parsed


if __name__ == "__main__":
    parsed = arguments()
    asyncio.run(serve_llm() if parsed.serve_llm else main(parsed))
