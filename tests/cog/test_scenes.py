"""`/scene` through the cog, on both libraries, against the faithful Discord REST server: a
member asks two personas to play a scene; each cycle each speaks once, in order, through the
channel's webhook, each line free-standing and each persona seeing the lines before its own;
/kill ends it; a message that arrives meanwhile waits for it; an admin can turn scenes off."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cog.test_personas import settle
from tests.support.discord_rest import DiscordRestServer, new_snowflake
from tests.support.llm_server import LLMServer
from tests.support.personas import reading_over_rest as started
from tests.support.rest_bots import MANAGE_GUILD, RestBot, conversation, posted, said
from tests.support.scripts import answer


async def scene(bot: RestBot, personas: str, cycles: int, instructions: str = "") -> str:
    """A member runs `/scene`; the description of its (ephemeral) answer."""
    options: list[dict[str, Any]] = [
        {"name": "personas", "type": 3, "value": personas},
        {"name": "cycles", "type": 4, "value": cycles},
    ]
    if instructions:
        options.append({"name": "instructions", "type": 3, "value": instructions})
    data = {"id": str(new_snowflake()), "name": "scene", "type": 1, "options": options}
    return said(await bot.command(data))


async def scenes_switch(bot: RestBot, enabled: bool) -> str:
    """An admin runs `/tomori scenes enabled:<enabled>`."""
    option = {"name": "enabled", "type": 5, "value": enabled}
    data = {
        "id": str(new_snowflake()),
        "name": "tomori",
        "type": 1,
        "options": [{"name": "scenes", "type": 1, "options": [option]}],
    }
    return said(await bot.command(data, permissions=MANAGE_GUILD))


async def cast_of_two(bot: RestBot) -> None:
    bot.allow_webhooks()
    await bot.persona("add", name="Aria", prompt="You are Aria, a bard.")
    await bot.persona("add", name="Bex", prompt="You are Bex, a drummer.")


@pytest.mark.slow  # six webhook messages: the channel's bucket takes a few seconds
async def test_a_scene_of_two_personas_over_three_cycles_posts_six_free_standing_lines_in_order(
    open_rest_bot: Any,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path)
    await cast_of_two(bot)
    bot.say("what a quiet tavern tonight")
    lines = [f"{who} line {n}." for n in (1, 2, 3) for who in ("Aria", "Bex")]
    llm_server.script(*(answer(line) for line in lines))

    told = await scene(bot, "Aria, Bex", 3, "a duel of songs at the tavern")
    assert "The scene of Aria and Bex (3 cycles) begins" in told
    async with asyncio.timeout(30):
        await bot.settled()
    shown = posted(discord_rest)
    assert [(m.username, m.content) for m in shown] == [(line.split()[0], line) for line in lines]
    assert all(m.webhook_id for m in shown)
    assert all("message_reference" not in m.payload for m in shown)  # free-standing
    requests = [conversation(r) for r in llm_server.requests]
    assert len(requests) == 6
    assert requests[0][0] == ("system", "You are Aria, a bard.")
    assert requests[1][0] == ("system", "You are Bex, a drummer.")
    first_notice = requests[0][-1][1]
    assert "alice: what a quiet tavern tonight" in first_notice  # the channel, then the notice
    assert "[Scene, cycle 1 of 3] You are Aria" in first_notice
    assert "a duel of songs at the tavern" in first_notice
    # Bex's second line sees everything before it: Aria's lines named, its own as its turns
    fourth = requests[3]
    assert ("assistant", "Bex line 1.") in fourth
    assert "Aria: Aria line 1." in fourth[1][1]
    assert "Aria: Aria line 2." in fourth[-1][1]
    assert "[Scene, cycle 2 of 3] You are Bex" in fourth[-1][1]
    # the notice is the request's alone: no later request shows an earlier one
    assert sum("[Scene, cycle" in text for _, text in requests[5]) == 1


async def test_kill_during_a_scene_stops_the_speaking_persona_and_the_rest(
    open_rest_bot: Any,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path)
    await cast_of_two(bot)
    verses = "\n\n".join(f"Verse {n}, la la la." for n in range(20))
    llm_server.script(answer("Aria opens."), answer(verses, pieces=20, gap=0.1), answer("Never."))
    await scene(bot, "aria bex", 5)
    async with asyncio.timeout(5):
        while len(llm_server.requests) < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.3)  # Bex is mid-song
    killed_at = time.monotonic()
    await bot.kill()
    await settle(bot)
    assert time.monotonic() - killed_at < 3
    shown = posted(discord_rest)
    assert shown[0].content == "Aria opens."
    assert {m.username for m in shown[1:]} <= {"Bex"}
    assert "Verse 19" not in " ".join(m.content for m in shown)
    assert len(llm_server.requests) == 2  # no line after Bex's was asked for


async def test_a_message_that_arrives_during_a_scene_waits_and_is_answered_after_it(
    open_rest_bot: Any,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path)
    await cast_of_two(bot)
    llm_server.script(
        answer("Aria begins.", pieces=4, gap=0.15), answer("Bex answers."), answer("The bot.")
    )
    await scene(bot, "Aria,Bex", 1)
    async with asyncio.timeout(5):
        while not llm_server.requests:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    asked = bot.say(f"{bot.mention()} who is playing?")
    await settle(bot)
    shown = posted(discord_rest)
    assert [(m.username, m.content) for m in shown] == [
        ("Aria", "Aria begins."),
        ("Bex", "Bex answers."),
        ("Tomori", "The bot."),
    ]
    assert shown[2].reply_to == asked  # a queued answer replies to what it answers
    assert "Bex: Bex answers." in conversation(llm_server.requests[2])[-1][1]  # it saw the scene


async def test_scenes_turned_off_bad_scenes_and_a_members_cooldown_are_refused_to_them(
    open_rest_bot: Any,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, user_cooldown_ms=60_000)
    await cast_of_two(bot)
    assert "unknown persona" not in (refused := await scene(bot, "Aria, Zed", 2))
    assert "no persona named Zed" in refused
    assert "2 or 3 personas" in await scene(bot, "Aria", 2)
    assert "2 or 3 personas" in await scene(bot, "Aria, Bex, Cy, Dot", 2)

    assert "cannot run /scene" in await scenes_switch(bot, False)
    assert "Scenes are off in this server" in await scene(bot, "Aria, Bex", 2)
    assert "may run /scene" in await scenes_switch(bot, True)
    llm_server.script(answer("On again."), answer("Indeed."))
    assert "begins" in await scene(bot, "Aria, Bex", 1)
    assert "You can ask me again" in await scene(bot, "Aria, Bex", 1)  # the member's cooldown
    await settle(bot)
    assert [m.content for m in posted(discord_rest)] == ["On again.", "Indeed."]


async def test_a_scene_stops_between_lines_once_its_askers_day_is_spent_and_says_so(
    open_rest_bot: Any,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, user_daily_tokens=20)
    await cast_of_two(bot)
    lines = [f"{who} line {n}." for n in (1, 2, 3) for who in ("Aria", "Bex")]
    llm_server.script(*(answer(line) for line in lines))  # 13 tokens a line
    await scene(bot, "Aria, Bex", 3)
    await settle(bot)
    assert len(llm_server.requests) == 2  # 13, then 26 of the day's 20: no third line
    shown = posted(discord_rest)
    assert [m.content for m in shown if m.webhook_id] == ["Aria line 1.", "Bex line 1."]
    [notice] = [m.payload["embeds"][0] for m in shown if not m.webhook_id]
    assert notice["title"] == "Daily Limit Reached"
    assert notice["description"].startswith("You have used your tokens for today")
