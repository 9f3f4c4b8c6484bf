"""Proxied members (PluralKit, Tupperbox) through the cog, on both libraries, against the faithful
Discord REST server: a message a proxy deletes and reposts through its webhook is answered
once, as the repost, for the member who wrote it; an ordinary message waits for nothing."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import OpenRestBot, RestBot, conversation
from tests.support.scripts import answer, stalled_after
from tests.support.waiting import until
from tests.support.world import CHANNEL_ID, Person
from tomori.policy.proxies import KNOWN_PROXIES

PLURALKIT, TUPPERBOX = KNOWN_PROXIES
ANOTHER_PROXY = 7_000_000_000_000_000_007
"""A proxy bot the bot's author added with TOMORI_PROXY_BOTS."""
GRACE_MS = 600
PROXY_TAKES_S = 0.1
"""How long the proxy takes to repost a member's message (PluralKit's is a few hundred ms)."""


async def started(
    open_rest_bot: OpenRestBot, llm: LLMServer, tmp_path: Path, **settings: object
) -> RestBot:
    values: dict[str, object] = {
        "proxy_grace_ms": GRACE_MS,
        "proxy_bots": [ANOTHER_PROXY],
        "user_cooldown_ms": 60_000,
        **settings,
    }
    return await open_rest_bot(settings_for(tmp_path, **values), chain_for(llm))


@pytest.mark.parametrize(
    ("proxy", "deletes_first"),
    [(PLURALKIT, False), (TUPPERBOX, True), (ANOTHER_PROXY, False)],
    ids=["pluralkit-reposts-then-deletes", "tupperbox-deletes-then-reposts", "an-added-proxy"],
)
async def test_a_proxied_message_is_answered_once_as_its_repost_for_the_member(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    tmp_path: Path,
    proxy: int,
    deletes_first: bool,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path)
    bot.joins(proxy, "proxybot")
    llm_server.script(answer("Hello, Luna."), answer("Not yet."))
    original = bot.say(f"lu: hi {bot.mention()}, how are you?")
    await asyncio.sleep(PROXY_TAKES_S)
    if deletes_first:
        bot.delete(original)
    repost = bot.repost(f"hi {bot.mention()}, how are you?", name="Luna", application_id=proxy)
    if not deletes_first:
        bot.delete(original)
    await bot.settled()
    assert bot.contents() == ["Hello, Luna."]
    assert len(llm_server.requests) == 1
    # the channel shows the repost under the proxy's name; the deleted original is gone
    assert conversation(llm_server.requests[0])[1:] == [("user", "Luna: hi @Tomori, how are you?")]
    assert [m.id for m in bot.server.messages(CHANNEL_ID)][:1] == [repost]

    again = bot.say(f"{bot.mention()} and now?")  # the member's cooldown began with the repost
    await bot.settled()
    assert len(llm_server.requests) == 1
    assert [(m.embeds[0]["title"], m.reply_to) for m in bot.shown()[1:]] == [("Slow Down", again)]


@pytest.mark.parametrize("memory_channels", [0, 500], ids=["read-over-rest", "read-from-memory"])
async def test_an_original_the_proxy_has_not_deleted_yet_is_never_shown_beside_its_repost(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path, memory_channels: int
) -> None:
    """PluralKit reposts before it deletes, and its delete may come late (or never, without
    Manage Messages): the original stands in the channel while the repost's answer, and the
    next member's, read it. Each is shown the member's message once, under the repost's name."""
    bot = await started(
        open_rest_bot, llm_server, tmp_path, history_memory_channels=memory_channels
    )
    bot.joins(PLURALKIT, "PluralKit")
    llm_server.script(answer("Hello, Luna."), answer("Hi Bob."))
    bot.say(f"lu: hi {bot.mention()}, how are you?")
    await asyncio.sleep(PROXY_TAKES_S)
    bot.repost(f"hi {bot.mention()}, how are you?", name="Luna", application_id=PLURALKIT)
    await bot.settled()
    bot.say(f"{bot.mention()} and me?", by=Person.BOB)
    await bot.settled()
    assert bot.contents() == ["Hello, Luna.", "Hi Bob."]
    first, second = (conversation(request)[1:] for request in llm_server.requests)
    assert first == [("user", "Luna: hi @Tomori, how are you?")]
    assert second == [
        ("user", "Luna: hi @Tomori, how are you?"),
        ("assistant", "Hello, Luna."),
        ("user", "bob: @Tomori and me?"),
    ]


async def test_a_message_in_a_proxy_server_that_no_proxy_takes_is_answered_after_the_grace(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path)
    bot.joins(PLURALKIT, "PluralKit")
    llm_server.script(answer("Hi Alice."))
    said_at = time.monotonic()
    bot.say(f"{bot.mention()} hello")
    await bot.settled()
    assert bot.contents() == ["Hi Alice."]
    assert time.monotonic() - said_at >= GRACE_MS / 1000


async def test_an_ordinary_message_is_answered_at_once_where_no_proxy_is_present(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, proxy_grace_ms=10_000)
    llm_server.script(answer("Hi Bob."))
    said_at = time.monotonic()
    bot.say(f"{bot.mention()} hello", by=Person.BOB)
    await bot.settled()
    assert bot.contents() == ["Hi Bob."]
    assert time.monotonic() - said_at < 2


async def test_a_proxy_repost_of_a_message_not_asking_for_a_reply_is_not_answered(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, reply_to_bots=True)
    bot.joins(PLURALKIT, "PluralKit")
    original = bot.say("lu: just chatting")
    await asyncio.sleep(PROXY_TAKES_S)
    bot.repost("just chatting", name="Luna", application_id=PLURALKIT)
    bot.delete(original)
    await bot.settled()
    assert bot.shown() == []
    assert llm_server.requests == []


async def test_a_proxied_stop_word_stops_the_members_answer_at_once(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """The member's "lu: stop" wore its tags, so it was no stop word; the repost, "stop", is
    theirs, and stops the answer they asked for as their own message would."""
    bot = await started(open_rest_bot, llm_server, tmp_path, stream_sdk_call_timeout_ms=60_000)
    bot.joins(PLURALKIT, "PluralKit")
    llm_server.script(stalled_after("Thinking hard.\n\n"))
    bot.say(f"{bot.mention()} think")  # no proxy took it: answered after the grace
    await until(lambda: bot.contents() == ["Thinking hard."])
    original = bot.say("lu: stop")
    await asyncio.sleep(PROXY_TAKES_S)
    said_at = time.monotonic()
    bot.repost("stop", name="Luna", application_id=PLURALKIT)
    bot.delete(original)
    connection = llm_server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), 2)
    assert connection.closed_at is not None
    assert connection.closed_at - said_at < 0.5
    await bot.settled()
    assert len(llm_server.requests) == 1  # the stop word was not answered
    assert bot.contents() == ["Thinking hard."]


async def test_a_proxied_word_never_claims_another_members_message_that_holds_it(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Bob's question holds "of"; Alice's proxied "lu: of" is reposted as "of": the repost is
    Alice's (asking for no reply), and Bob's question is answered as his own, not lost."""
    bot = await started(open_rest_bot, llm_server, tmp_path)
    bot.joins(PLURALKIT, "PluralKit")
    llm_server.script(answer("For Bob."))
    bot.say(f"{bot.mention()} what of the launch on Friday?", by=Person.BOB)
    original = bot.say("lu: of")
    await asyncio.sleep(PROXY_TAKES_S)
    bot.repost("of", name="Luna", application_id=PLURALKIT)
    bot.delete(original)
    await bot.settled()
    assert bot.contents() == ["For Bob."]
    [asked] = llm_server.requests
    assert conversation(asked)[-1] == ("user", "bob: @Tomori what of the launch on Friday?")
