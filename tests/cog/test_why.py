""" "Why no answer?" (a message's context menu, Apps → Why no answer?) on the Discord-faithful
REST server, with each library's real client: a message dropped for age, one refused by a
cooldown and one whose models all failed each get their own account, ephemerally, with no
message text, prompt or key in it; another member is refused; a message not for the bot says
why, one the bot never saw has no record; and the accounts are the database's, so a second bot
on it (a restart) tells them alike."""

from __future__ import annotations

from pathlib import Path

from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import new_snowflake
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import MANAGE_GUILD, OpenRestBot, RestBot, said, user_message
from tests.support.scripts import answer, http_error, in_parts, silent
from tests.support.waiting import until
from tests.support.world import Person
from tomori.commands import WHY
from tomori.config.settings import DEFAULT_SYSTEM_PROMPT
from tomori.monitoring.why import NOT_YOURS

MANAGE_MESSAGES = 1 << 13
SECRET = "pineapple"
"""A word every member's message holds, which no account may show."""
SLOW = answer("The first answer, slowly.", pieces=6, gap=0.15)  # about 0.9 s: past the age


async def why(
    bot: RestBot, message_id: int, *, by: Person = Person.ALICE, permissions: int = 0
) -> str:
    """What `by` is told, ephemerally, when they ask why of message `message_id`."""
    reply = await bot.on_message(
        WHY.name, bot.payload_of(message_id), by=by, permissions=permissions
    )
    told = said(reply)  # ephemeral, or it fails
    for kept_out in (SECRET, "sk-test", DEFAULT_SYSTEM_PROMPT[:30]):
        assert kept_out not in told
    return told


async def set_cooldown(bot: RestBot, cooldown_ms: int) -> None:
    """An admin runs `/tomori limits cooldown_ms:<cooldown_ms>`."""
    given = [{"name": "cooldown_ms", "type": 4, "value": cooldown_ms}]
    data = {
        "id": str(new_snowflake()),
        "name": "tomori",
        "type": 1,
        "options": [{"name": "limits", "type": 1, "options": given}],
    }
    await bot.command(data, permissions=MANAGE_GUILD)


async def test_each_message_is_told_what_became_of_it_and_only_its_sender_or_a_moderator(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    settings = settings_for(
        tmp_path,
        queue_max_age_ms=400,
        stream_first_token_timeout_ms=600,
        model_probe_interval_ms=0,
    )
    chain = chain_for(llm_server, "openai:first,openai:second")
    bot = await open_rest_bot(settings, chain)
    llm_server.script(SLOW, http_error(429), silent())
    bot.say(f"{bot.mention()} {SECRET} one")
    dropped = bot.say(f"{bot.mention()} {SECRET} two", by=Person.BOB)  # waits past its age
    await bot.settled()
    await set_cooldown(bot, 60_000)
    failed = bot.say(f"{bot.mention()} {SECRET} three")  # 429, then a stall
    await bot.settled()
    refused = bot.say(f"{bot.mention()} {SECRET} four")  # inside the window of "three"
    unaddressed = bot.say(f"{SECRET}, to no one")
    await bot.settled()
    unseen = user_message(f"{bot.mention()} {SECRET} while away")
    bot.server.add_message(unseen)  # the bot never received it
    assert len(llm_server.requests) == 3

    told = await why(bot, dropped, by=Person.BOB)
    assert "waited too long in the queue" in told
    assert "Model" not in told  # no model was asked for it
    all_failed = await why(bot, failed)
    assert "`openai:first`: 429" in all_failed
    assert "`openai:second`: stalled" in all_failed
    assert "Delivered" not in all_failed
    assert "No model answered it." in all_failed
    told = await why(bot, refused)
    assert "Refused by a limit: your cooldown in this server until <t:" in told
    assert await why(bot, unaddressed) == (
        "Not answered. It was not addressed to me: it does not mention me, reply to me or name "
        "one of my personas, and this channel is not one where I answer every message."
    )
    assert await why(bot, int(unseen["id"])) == (
        "I have no record of this message: I did not see it (sent while I was away), or it is "
        "more than a day old."
    )

    assert await why(bot, failed, by=Person.BOB) == NOT_YOURS.description
    assert await why(bot, dropped) == NOT_YOURS.description  # not even whether there is one
    moderator = await why(bot, failed, by=Person.BOB, permissions=MANAGE_MESSAGES)
    assert "`openai:first`: 429" in moderator

    await bot.stop()  # a restart: a second bot on the same database
    again = await open_rest_bot(settings, chain)
    assert await why(again, failed) == all_failed
    assert "waited too long" in await why(again, dropped, by=Person.BOB)


async def test_an_answer_a_moderator_stopped_says_so_and_what_it_delivered(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    llm_server.script(in_parts("A first paragraph.\n\n", "and more", gap=30))
    stopped = bot.say(f"{bot.mention()} {SECRET} one")
    cleared = bot.say(f"{bot.mention()} {SECRET} two")  # queued behind it
    await until(lambda: bot.contents() != [])
    await bot.kill(by=Person.BOB, permissions=MANAGE_MESSAGES)
    await bot.settled()

    told = await why(bot, stopped)
    assert "stopped by a moderator's /kill" in told
    assert "Delivered: 1 message." in told
    assert "No model answered it." not in told  # it was stopped, and delivered what it had
    assert "Cleared from the queue by another member's /kill." in await why(bot, cleared)
