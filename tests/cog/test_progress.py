"""A direct trigger shows its turn's progress as the bot's reactions, on the Discord-faithful
REST server with each library's real client: queued, then working, then taken down once
answered; a fast answer shows nothing but itself; a failure shows its mark, or its embed, or
nothing, as the server's /tomori errors says; /tomori progress off shows none. A member's own
/kill or stop word shows their cleared messages stopped, and "Why no answer?" says who cleared
them; a message replaced by a follow-up shows nothing once stopped (the next answer covers it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import new_snowflake
from tests.support.llm_server import LLMServer, Reply, hold_until, sse
from tests.support.openai_wire import chunk
from tests.support.rest_bots import MANAGE_GUILD, OpenRestBot, RestBot, said
from tests.support.scripts import answer, finished, http_error
from tests.support.waiting import until
from tests.support.world import CHANNEL_ID, Person
from tomori.commands import WHY
from tomori.config.settings import ShowProgress
from tomori.delivery.progress import MARKS, Stage
from tomori_cog.progress_marks import TriggerMarks

QUEUED, WORKING, FAILED = MARKS[Stage.QUEUED], MARKS[Stage.WORKING], MARKS[Stage.FAILED]
STOPPED = MARKS[Stage.STOPPED]
MANAGE_MESSAGES = 1 << 13
KEY_REFUSED = "Provider Refused the Key"


async def started(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path, **settings_: Any
) -> RestBot:
    """A bot whose server shows progress (the test settings turn it off), with first-token
    budgets long enough for a model a test holds while it watches the marks."""
    settings = settings_for(
        tmp_path,
        progress=ShowProgress.REACTIONS,
        stream_first_token_timeout_ms=20_000,
        stream_sdk_call_timeout_ms=20_000,
        **settings_,
    )
    return await open_rest_bot(settings, chain_for(llm_server))


@pytest.fixture
def due(monkeypatch: pytest.MonkeyPatch) -> set[int]:
    """The triggers whose mark came due: their marks were told what to show (a mark, or none
    where the server shows none), which a passing stage is only once it has lasted long enough.
    A test asserting that no mark went up waits for that, then for `ProgressMarks.settled`."""
    heard: set[int] = set()
    show = TriggerMarks.show

    def heard_show(port: TriggerMarks, mark: str | None) -> None:
        heard.add(port.message_id)
        show(port, mark)

    monkeypatch.setattr(TriggerMarks, "show", heard_show)
    return heard


def held(text: str, until_set: asyncio.Event) -> Reply:
    """The model says nothing until the test sets `until_set`, then streams `text`."""
    return Reply(body=[hold_until(until_set), sse(chunk(text)), *finished(text)])


async def chosen(
    bot: RestBot, subcommand: str, mode: str, *, permissions: int = MANAGE_GUILD
) -> dict[str, Any]:
    """An admin runs `/tomori <subcommand> mode:<mode>`."""
    data = {
        "id": str(new_snowflake()),
        "name": "tomori",
        "type": 1,
        "options": [
            {
                "name": subcommand,
                "type": 1,
                "options": [{"name": "mode", "type": 3, "value": mode}],
            }
        ],
    }
    return await bot.command(data, permissions=permissions)


def embed_titles(bot: RestBot) -> list[str]:
    return [embed["title"] for message in bot.shown() for embed in message.embeds]


async def test_a_queued_message_shows_queued_then_working_then_nothing_once_answered(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path)
    server = bot.server
    first_go, second_go = asyncio.Event(), asyncio.Event()
    llm_server.script(held("First answer.", first_go), held("Second answer.", second_go))

    first = bot.say(f"{bot.mention()} the first question")
    await until(lambda: server.reactions_on(first) == [WORKING])
    second = bot.say(f"{bot.mention()} the second one", by=Person.BOB)
    await until(lambda: server.reactions_on(second) == [QUEUED])
    first_go.set()
    await until(lambda: server.reactions_on(second) == [WORKING])
    assert server.reactions_on(first) == []
    second_go.set()
    await bot.settled()

    assert bot.contents() == ["First answer.", "Second answer."]
    assert server.marks_of(first) == [f"+{WORKING}", f"-{WORKING}"]
    assert server.marks_of(second) == [f"+{QUEUED}", f"+{WORKING}", f"-{QUEUED}", f"-{WORKING}"]
    assert server.reactions_on(second) == []
    assert server.rate_limited["user"] == server.rate_limited["global"] == 0


async def test_a_kill_just_after_the_working_mark_swaps_the_marks_without_a_429(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """/kill the moment 💭 lands: ⏹️ goes up and 💭 comes down in the channel's reaction
    bucket, neither refused. (nextcord held the add a second on its own, out of the pacer's
    sight, and the removal, on a route it had not linked yet, left right after it: a 429.)"""
    bot = await started(open_rest_bot, llm_server, tmp_path)
    server = bot.server
    go = asyncio.Event()
    llm_server.script(held("Never said.", go))
    asked = bot.say(f"{bot.mention()} a long one")
    await until(lambda: server.reactions_on(asked) == [WORKING])
    await bot.kill()
    go.set()
    await bot.settled()

    assert server.marks_of(asked) == [f"+{WORKING}", f"+{STOPPED}", f"-{WORKING}"]
    assert server.reactions_on(asked) == [STOPPED]
    assert server.rate_limited_by_route == {}
    assert server.rate_limited["user"] == server.rate_limited["global"] == 0


async def test_a_fast_answer_shows_no_mark_and_progress_off_shows_none(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    tmp_path: Path,
    due: set[int],
) -> None:
    """An answer within a second shows no mark at all (no 💭 that vanishes as it lands); with
    /tomori progress off, a turn held past a second shows none either."""
    bot = await started(open_rest_bot, llm_server, tmp_path)
    server = bot.server
    llm_server.script(answer("Quick."))
    fast = bot.say(f"{bot.mention()} quick one")
    await bot.settled()
    assert bot.contents() == ["Quick."]
    assert server.marks_of(fast) == []
    assert server.requests_by_route["reaction"] == 0

    assert (await chosen(bot, "progress", "off"))["type"] == 4
    go = asyncio.Event()
    llm_server.script(held("Slow.", go))
    slow = bot.say(f"{bot.mention()} slow one")
    await until(lambda: slow in due)
    await bot.chat.marks.settled(CHANNEL_ID)
    assert server.requests_by_route["reaction"] == 0
    go.set()
    await bot.settled()
    assert bot.contents() == ["Quick.", "Slow."]
    assert server.marks_of(slow) == []
    assert server.requests_by_route["reaction"] == 0


async def test_a_failed_answer_is_told_as_the_servers_errors_setting_says(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path)
    server = bot.server

    async def fails() -> int:
        llm_server.script(http_error(401))
        message = bot.say(f"{bot.mention()} hello")
        await bot.settled()
        return message

    replied = await fails()  # by default: the embed, and the failed mark
    assert embed_titles(bot) == [KEY_REFUSED]
    assert server.reactions_on(replied) == [FAILED]

    assert (await chosen(bot, "errors", "react"))["type"] == 4
    reacted = await fails()
    assert embed_titles(bot) == [KEY_REFUSED]  # no new embed
    assert server.reactions_on(reacted) == [FAILED]

    assert (await chosen(bot, "errors", "silent"))["type"] == 4
    silent = await fails()
    assert embed_titles(bot) == [KEY_REFUSED]
    assert server.marks_of(silent) == []

    assert (await chosen(bot, "progress", "off"))["type"] == 4
    assert (await chosen(bot, "errors", "react"))["type"] == 4
    marked_alone = await fails()  # react shows the failed mark with progress off too
    assert embed_titles(bot) == [KEY_REFUSED]
    assert server.reactions_on(marked_alone) == [FAILED]

    assert (await chosen(bot, "errors", "reply"))["type"] == 4
    told = await fails()
    assert embed_titles(bot) == [KEY_REFUSED, KEY_REFUSED]
    assert server.marks_of(told) == []

    shown = (await bot.tomori("show"))["data"]["embeds"][0]["description"]
    assert "Progress: off (this server)" in shown
    assert "Errors: reply (this server)" in shown


async def test_a_channel_refusing_reactions_costs_one_request_and_answers_as_ever(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    tmp_path: Path,
    due: set[int],
) -> None:
    """Without Add Reactions, the first mark is refused (403, an invalid request toward
    Discord's ban): the channel shows no marks for a while, and answers as ever."""
    bot = await started(open_rest_bot, llm_server, tmp_path)
    server = bot.server
    server.refuse_reactions(CHANNEL_ID)

    async def answered_once_its_mark_came_due(n: int) -> None:
        go = asyncio.Event()
        llm_server.script(held(f"Answer {n}.", go))
        asked = bot.say(f"{bot.mention()} question {n}")
        await until(lambda: asked in due)
        await bot.chat.marks.settled(CHANNEL_ID)
        assert server.requests_by_route["reaction"] == 1  # the first refused, no more sent
        go.set()
        await bot.settled()

    for n in (1, 2):
        await answered_once_its_mark_came_due(n)
    assert bot.contents() == ["Answer 1.", "Answer 2."]
    assert server.requests_by_route["reaction"] == 1
    assert server.reaction_log == []


async def why(bot: RestBot, message_id: int) -> str:
    """What its sender, Alice, is told when she asks "Why no answer?" of `message_id`."""
    return said(await bot.on_message(WHY.name, bot.payload_of(message_id)))


@pytest.mark.parametrize(
    ("library", "stop"),  # each kind of stop once, the libraries in turn: a run is ~15 s of marks
    [("nextcord", "own /kill"), ("discordpy", "stop word"), ("nextcord", "moderator's /kill")],
)
async def test_a_members_own_stop_shows_their_cleared_messages_stopped_and_says_so(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path, stop: str
) -> None:
    """Alice's answer runs, Bob's message waits, and two more of hers (⏳); her own /kill, her
    stop word, or her /kill as a moderator clears hers: each shows ⏹️ (no ⏳ left), and its
    account says her own stop cleared it; the stopped answer's account does not say no model
    answered. (Bob's, first in the queue, takes the channel as her turn ends.)"""
    bot = await started(open_rest_bot, llm_server, tmp_path)
    server = bot.server
    go = asyncio.Event()
    llm_server.script(held("Never shown.", go), answer("For Bob."))
    running = bot.say(f"{bot.mention()} the first question")
    await until(lambda: server.reactions_on(running) == [WORKING])
    bobs = bot.say(f"{bot.mention()} a question of Bob's", by=Person.BOB)
    queued = [bot.say(f"{bot.mention()} then this"), bot.say(f"{bot.mention()} and this")]
    await until(lambda: all(server.reactions_on(m) == [QUEUED] for m in (bobs, *queued)))

    if stop == "stop word":
        bot.say("stop")
    else:
        await bot.kill(permissions=MANAGE_MESSAGES if stop == "moderator's /kill" else 0)
    await bot.settled()
    stopped = (running, *queued)
    await until(lambda: all(server.reactions_on(m) == [STOPPED] for m in stopped))
    go.set()

    assert all(server.marks_of(message)[-2:] == [f"+{STOPPED}", f"-{QUEUED}"] for message in queued)
    for message in queued:
        told = await why(bot, message)
        assert "Cleared from the queue by its sender's own /kill or stop word." in told
        assert "queued behind another answer" in told  # the step before it
    assert "No model answered it." not in await why(bot, running)
    cleared_bobs = stop == "moderator's /kill"
    assert bot.contents() == ([] if cleared_bobs else ["For Bob."])


async def test_a_message_replaced_by_a_follow_up_shows_nothing_once_the_next_answer_covers_it(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Alice writes again while her answer runs: that answer stops, and the next, to the
    follow-up, covers both; the first message keeps no ⏹️ (it is answered)."""
    bot = await started(open_rest_bot, llm_server, tmp_path, follow_ups=True)
    server = bot.server
    first_go = asyncio.Event()
    llm_server.script(held("Never shown.", first_go), answer("Both answered."))
    first = bot.say(f"{bot.mention()} the first question")
    await until(lambda: server.reactions_on(first) == [WORKING])
    follow_up = bot.say(f"{bot.mention()} and one more thing")
    await bot.settled()  # both turns, and their marks
    first_go.set()

    assert bot.contents() == ["Both answered."]
    assert server.reactions_on(first) == []
    assert f"+{STOPPED}" not in server.marks_of(first)
    assert server.reactions_on(follow_up) == []
