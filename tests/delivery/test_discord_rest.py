"""The faithful Discord REST server (tests/support/discord_rest.py) behaves as Discord does,
with raw HTTP and with the real nextcord and discord.py HTTP clients, and the cog answers
through it on both libraries.

The raw requests show the wire (headers, bodies, which requests count against what); the
library requests show that the real clients read it as they read Discord (they pace on the
bucket headers, and take a 429 without `Via` for Cloudflare's ban)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import discord
import nextcord
import pytest

from tests.support.bots import Library
from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import DiscordRestServer, RouteLimit, Snowflakes, pointed_at
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import OpenRestBot, logged_in, rest_server
from tests.support.scripts import answer
from tests.support.world import CHANNEL_ID, CHANNEL_IDS, GUILD_ID
from tomori.commands import WHY
from tomori.delivery.notices import KILL_NOTHING_TO_STOP
from tomori_cog.buckets import scope_buckets

OTHER_CHANNEL = CHANNEL_IDS[1]


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def post_message(
    http: aiohttp.ClientSession, server: DiscordRestServer, channel: int, token: str | None = None
) -> aiohttp.ClientResponse:
    """A message create as a bot sends it, answered and read whole."""
    url = f"{server.api_base}/channels/{channel}/messages"
    auth = {"Authorization": f"Bot {token or server.token}"}
    async with http.post(url, json={"content": "hi"}, headers=auth) as response:
        await response.read()
        return response


async def started(**limits: Any) -> DiscordRestServer:
    server = rest_server(**limits)
    await server.start()
    for channel in CHANNEL_IDS:
        server.add_channel(channel, guild_id=GUILD_ID)
    return server


async def test_answers_carry_discords_bucket_headers_and_the_hash_is_the_same_for_every_channel(
    http: aiohttp.ClientSession,
) -> None:
    server = await started()
    try:
        first = await post_message(http, server, CHANNEL_ID)
        other = await post_message(http, server, OTHER_CHANNEL)
        assert first.status == 200
        assert first.headers["Via"] == "1.1 google"
        assert first.headers["X-RateLimit-Limit"] == "5"
        assert first.headers["X-RateLimit-Remaining"] == "4"
        assert 4.9 <= float(first.headers["X-RateLimit-Reset-After"]) <= 5.0
        assert float(first.headers["X-RateLimit-Reset"]) == pytest.approx(time.time() + 5, abs=1)
        assert first.headers["X-RateLimit-Bucket"] == other.headers["X-RateLimit-Bucket"]
        assert other.headers["X-RateLimit-Remaining"] == "4"  # a bucket per channel
        assert [m.content for m in server.messages(CHANNEL_ID)] == ["hi"]
    finally:
        await server.close()


async def test_a_channels_sixth_message_in_five_seconds_is_refused_and_another_channel_is_not(
    http: aiohttp.ClientSession,
) -> None:
    server = await started()
    try:
        for _ in range(5):
            assert (await post_message(http, server, CHANNEL_ID)).status == 200
        refused = await post_message(http, server, CHANNEL_ID)
        assert refused.status == 429
        assert refused.headers["X-RateLimit-Scope"] == "user"
        assert refused.headers["X-RateLimit-Remaining"] == "0"
        assert refused.headers["Via"] == "1.1 google"
        assert int(refused.headers["Retry-After"]) >= 1
        body = await refused.json()
        assert body["message"] == "You are being rate limited."
        assert body["global"] is False
        assert 0 < body["retry_after"] <= 5
        assert (await post_message(http, server, OTHER_CHANNEL)).status == 200
        assert server.rate_limited == {"global": 0, "user": 1, "shared": 0}
        assert server.rate_limited_by_route == {"message_create": 1}
        assert server.invalid_requests() == 1
        assert len(server.messages(CHANNEL_ID)) == 5
    finally:
        await server.close()


async def test_the_fifty_first_request_of_the_token_in_a_second_gets_the_global_429(
    http: aiohttp.ClientSession,
) -> None:
    # A long window keeps the second from rolling over on a slow machine; the limit is the
    # default 50.
    server = await started(global_window=60.0)
    channels = [CHANNEL_ID + 100 + n for n in range(11)]
    for channel in channels:
        server.add_channel(channel, guild_id=GUILD_ID)
    try:
        answers = [await post_message(http, server, c) for c in channels for _ in range(5)]
        statuses = [a.status for a in answers]
        assert statuses == [200] * 50 + [429] * 5
        refused = answers[-1]
        assert refused.headers["X-RateLimit-Global"] == "true"
        assert refused.headers["X-RateLimit-Scope"] == "global"
        assert refused.headers["Via"] == "1.1 google"
        assert int(refused.headers["Retry-After"]) >= 1
        body = await refused.json()
        assert body["global"] is True
        assert body["message"] == "You are being rate limited."
        assert body["retry_after"] > 0
        assert server.rate_limited["global"] == 5
        assert server.requests == 55
        assert server.busiest_second() == 55
        assert server.requests_per_second() == 55.0
    finally:
        await server.close()


async def test_interaction_callbacks_are_answered_while_the_token_is_globally_limited(
    http: aiohttp.ClientSession,
) -> None:
    server = await started(global_limit=1, global_window=60.0)
    try:
        assert (await post_message(http, server, CHANNEL_ID)).status == 200
        assert (await post_message(http, server, CHANNEL_ID)).status == 429
        callback = f"{server.api_base}/interactions/123/interaction-token/callback"
        async with http.post(callback, json={"type": 5}) as response:
            assert response.status == 200
        assert server.interaction_callbacks == [{"type": 5, "data": {}}]
        assert server.requests == 2  # the callback is not the bot token's
    finally:
        await server.close()


async def test_too_many_invalid_requests_ban_the_ip_as_cloudflare_does(
    http: aiohttp.ClientSession,
) -> None:
    server = await started(invalid_threshold=5, ban_seconds=60.0)
    try:
        for _ in range(5):
            assert (await post_message(http, server, CHANNEL_ID, token="wrong")).status == 401
        assert server.invalid_requests() == 5
        assert server.banned
        banned = await post_message(http, server, CHANNEL_ID)
        assert banned.status == 429
        assert "Via" not in banned.headers
        assert "error code: 1015" in await banned.text()
        assert server.banned_requests == 1
        with pointed_at(server.api_base):
            for library in ("nextcord", "discordpy"):
                # the real clients read it as a ban: they raise at once, without retrying
                with pytest.raises((nextcord.HTTPException, discord.HTTPException)):
                    async with asyncio.timeout(5):
                        await logged_in(library, server.token)
        assert server.banned_requests == 3
    finally:
        await server.close()


@pytest.mark.parametrize("library", ["nextcord", "discordpy"])
async def test_the_real_clients_pace_a_channel_by_its_bucket_headers(
    library: Library, discord_rest: DiscordRestServer
) -> None:
    discord_rest.route_limits["message_create"] = RouteLimit(2, 0.5)
    bot = await logged_in(library, discord_rest.token)
    try:
        channel = bot.get_channel(CHANNEL_ID)
        begun = time.monotonic()
        async with asyncio.timeout(10):
            for n in range(6):
                await channel.send(f"message {n}")
        took = time.monotonic() - begun
        shown = [m.content for m in discord_rest.messages(CHANNEL_ID)]
        assert shown == [f"message {n}" for n in range(6)]
        assert took >= 0.9  # three windows of two
        assert discord_rest.rate_limited["global"] == 0
    finally:
        await bot.http.close()


async def five_then_two_elsewhere(bot: Any, discord_rest: DiscordRestServer) -> float:
    """Channel A sends the five messages of its window, then channel B two, which its own
    bucket allows at once: how long B's two took."""
    discord_rest.route_limits["message_create"] = RouteLimit(5, 2.0)
    a, b = bot.get_channel(CHANNEL_ID), bot.get_channel(OTHER_CHANNEL)
    for n in range(5):
        await a.send(f"a {n}")
    begun = time.monotonic()
    async with asyncio.timeout(10):
        await b.send("b 0")
        await b.send("b 1")
    assert [m.content for m in discord_rest.messages(OTHER_CHANNEL)] == ["b 0", "b 1"]
    return time.monotonic() - begun


async def test_nextcord_alone_makes_a_channel_wait_for_another_channels_bucket(
    discord_rest: DiscordRestServer,
) -> None:
    """The defect the cog corrects, as nextcord 3 has it: its `HTTPClient` stores a bucket
    under the `X-RateLimit-Bucket` hash alone (`_buckets`), and moves every route whose answer
    names a known hash onto that one stored bucket. The hash is the same for every channel,
    so B's second message waits for A's window to end. (If this fails, nextcord keys buckets
    as Discord does now, and `tomori_cog.buckets` may go.)"""
    bot = await logged_in("nextcord", discord_rest.token)
    try:
        assert await five_then_two_elsewhere(bot, discord_rest) >= 1.0
    finally:
        await bot.http.close()


async def test_a_channel_never_waits_for_another_channels_exhausted_bucket(
    library: Library, discord_rest: DiscordRestServer
) -> None:
    """The bot's client as the cog leaves it (on nextcord, buckets scoped per channel)."""
    bot = await logged_in(library, discord_rest.token)
    if library == "nextcord":
        assert scope_buckets(bot.http)
    try:
        assert await five_then_two_elsewhere(bot, discord_rest) < 1.0
    finally:
        await bot.http.close()


async def test_a_mention_is_answered_and_the_channel_on_the_server_shows_the_answer(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    llm_server.script(answer("Hello there!"))
    begun = time.monotonic()
    bot.say(f"{bot.mention()} hi")
    async with asyncio.timeout(10):
        await bot.settled()
    assert bot.contents() == ["Hello there!"]
    shown = bot.shown()
    assert shown[0].reply_to is None  # the answer follows the question: no reply needed
    assert (shown[0].allowed_mentions or {}).get("parse") == []  # no mass ping
    assert discord_rest.typed_in
    assert set(discord_rest.typed_in) == {CHANNEL_ID}
    assert discord_rest.rate_limited == {"global": 0, "user": 0, "shared": 0}
    assert time.monotonic() - begun < 5


async def test_kill_is_answered_through_the_interaction_callback(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    reply = await bot.kill()
    assert reply["data"]["embeds"][0]["title"] == KILL_NOTHING_TO_STOP.title
    assert reply["data"]["flags"] & 64  # only the member who asked sees it


@pytest.mark.parametrize("library", ["nextcord", "discordpy"])
async def test_history_edits_and_reads_answer_as_discord_does(
    library: Library, discord_rest: DiscordRestServer
) -> None:
    for route in ("message_create", "history"):  # what is read here, not how fast
        discord_rest.route_limits[route] = RouteLimit(50, 1.0)
    bot = await logged_in(library, discord_rest.token)
    try:
        channel = bot.get_channel(CHANNEL_ID)
        sent = [await channel.send(f"m{n}") for n in range(6)]
        await sent[2].edit(content="m2 edited")
        newest = [m.content async for m in channel.history(limit=3)]
        assert newest == ["m5", "m4", "m3"]
        older = [m.content async for m in channel.history(limit=2, before=sent[3])]
        assert older == ["m2 edited", "m1"]
        after = [m.content async for m in channel.history(limit=2, after=sent[3])]
        assert sorted(after) == ["m4", "m5"]
        around = [m.content async for m in channel.history(limit=3, around=sent[3])]
        assert sorted(around) == ["m2 edited", "m3", "m4"]
        fetched = await channel.fetch_message(sent[2].id)
        assert fetched.content == "m2 edited"
        assert discord_rest.messages(CHANNEL_ID)[2].versions == ["m2", "m2 edited"]
        with pytest.raises((nextcord.NotFound, discord.NotFound)):
            await channel.fetch_message(1)
        fetched_channel = await bot.fetch_channel(OTHER_CHANNEL)
        assert fetched_channel.id == OTHER_CHANNEL
    finally:
        await bot.http.close()


async def test_the_cogs_commands_sync_with_the_server(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    async with asyncio.timeout(10):
        if bot.library == "nextcord":
            await bot.bot.sync_all_application_commands()
        else:
            await bot.bot.tree.sync()
    registered = {(command["name"], command["type"]) for command in discord_rest.commands()}
    assert {("kill", 1), ("tomori", 1), (WHY.name, 3)} <= registered


@pytest.mark.parametrize("library", ["nextcord", "discordpy"])
async def test_a_webhook_message_is_sent_and_edited(
    library: Library, discord_rest: DiscordRestServer, http: aiohttp.ClientSession
) -> None:
    module: Any = nextcord if library == "nextcord" else discord
    webhook = module.Webhook.partial(77, "webhook-token", session=http)
    sent = await webhook.send("first", wait=True)
    await sent.edit(content="second")
    shown = discord_rest.webhook_messages["webhook-token"]
    assert [m.versions for m in shown] == [["first", "second"]]
    assert discord_rest.requests == 0  # a webhook's token is not the bot's
    assert discord_rest.requests_by_route["webhook"] == 2


@pytest.mark.parametrize("library", ["nextcord", "discordpy"])
async def test_a_refused_send_raises_forbidden_and_counts_as_invalid(
    library: Library, discord_rest: DiscordRestServer
) -> None:
    discord_rest.refuse_sends(CHANNEL_ID)
    bot = await logged_in(library, discord_rest.token)
    try:
        with pytest.raises((nextcord.Forbidden, discord.Forbidden)) as refused:
            await bot.get_channel(CHANNEL_ID).send("hi")
        assert getattr(refused.value, "code", None) == 50013  # Missing Permissions
        assert discord_rest.invalid_requests() == 1
        assert discord_rest.messages(CHANNEL_ID) == []
        discord_rest.allow_sends(CHANNEL_ID)
        await bot.get_channel(CHANNEL_ID).send("hi")
        assert [m.content for m in discord_rest.messages(CHANNEL_ID)] == ["hi"]
    finally:
        await bot.http.close()


async def create(
    http: aiohttp.ClientSession, server: DiscordRestServer, body: dict[str, Any]
) -> tuple[int, Any]:
    """A message create in CHANNEL_ID with `body`: its status and what it answered."""
    url = f"{server.api_base}/channels/{CHANNEL_ID}/messages"
    auth = {"Authorization": f"Bot {server.token}"}
    async with http.post(url, json=body, headers=auth) as response:
        return response.status, await response.json()


async def test_a_create_with_an_enforced_nonce_returns_the_message_it_made_before(
    http: aiohttp.ClientSession, discord_rest: DiscordRestServer
) -> None:
    """As Discord documents `enforce_nonce`: a nonce the same author used in the past few
    minutes gets that message back, and nothing new is created; a nonce alone is no check,
    and one longer than 25 characters is refused."""
    asked = {"content": "hi", "nonce": "1234", "enforce_nonce": True}
    first_status, first = await create(http, discord_rest, asked)
    again_status, again = await create(http, discord_rest, {**asked, "content": "changed"})
    assert (first_status, again_status) == (200, 200)
    assert again["id"] == first["id"]
    assert (again["content"], again["nonce"]) == ("hi", "1234")
    await create(http, discord_rest, {"content": "hi", "nonce": "1234"})  # not enforced
    status, refused = await create(http, discord_rest, {"content": "x", "nonce": "9" * 26})
    assert (status, refused["code"]) == (400, 50035)
    assert [m.content for m in discord_rest.messages(CHANNEL_ID)] == ["hi", "hi"]


@pytest.mark.parametrize("landed", [False, True], ids=["not-carried-out", "carried-out"])
@pytest.mark.parametrize("status", [503, None], ids=["503", "no-answer"])
async def test_a_failure_asked_for_answers_a_5xx_whether_or_not_it_was_carried_out(
    http: aiohttp.ClientSession, discord_rest: DiscordRestServer, landed: bool, status: int | None
) -> None:
    discord_rest.fail_next("message_create", status=status, landed=landed, after=1)
    assert (await create(http, discord_rest, {"content": "one"}))[0] == 200
    if status is None:
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await create(http, discord_rest, {"content": "two"})
    else:
        failed = await create(http, discord_rest, {"content": "two"})
        assert failed == (503, {"message": "503: Service Unavailable", "code": 0})
    assert (await create(http, discord_rest, {"content": "three"}))[0] == 200
    expected = ["one", "two", "three"] if landed else ["one", "three"]
    assert [m.content for m in discord_rest.messages(CHANNEL_ID)] == expected
    assert discord_rest.failed["message_create"] == 1


async def test_every_answer_waits_the_latency_asked_for(http: aiohttp.ClientSession) -> None:
    server = await started(latency=0.2)
    try:
        begun = time.monotonic()
        assert (await post_message(http, server, CHANNEL_ID)).status == 200
        assert time.monotonic() - begun >= 0.2
    finally:
        await server.close()


async def test_the_busiest_second_is_the_most_requests_in_any_one_second_span(
    http: aiohttp.ClientSession,
) -> None:
    server = await started()
    try:
        for pause_s in (0.0, 0.6, 1.1):
            await asyncio.sleep(pause_s)
            for channel in CHANNEL_IDS:
                assert (await post_message(http, server, channel)).status == 200
        assert server.busiest_second() == 6  # the first two bursts, 0.6 s apart
        assert server.requests == 9
    finally:
        await server.close()


def test_ids_made_in_two_processes_in_the_same_millisecond_differ_and_each_grows() -> None:
    first, second = Snowflakes(process=1), Snowflakes(process=2)
    now_ms = int(time.time() * 1000)
    made = [[maker.next(now_ms) for _ in range(5_000)] for maker in (first, second)]
    assert not set(made[0]) & set(made[1])
    assert all(a < b for ids in made for a, b in itertools.pairwise(ids))


async def test_only_a_webhook_an_application_owns_sends_buttons(
    discord_rest: DiscordRestServer, http: aiohttp.ClientSession
) -> None:
    """As Discord documents Execute Webhook: an application-owned webhook (one a bot made)
    can always send components; another has them ignored unless it asks `with_components`,
    and even then may send no interactive one."""
    auth = {"Authorization": f"Bot {discord_rest.token}"}
    url = f"{discord_rest.api_base}/channels/{CHANNEL_ID}/webhooks"
    async with http.post(url, json={"name": "the bot's"}, headers=auth) as response:
        owned = await response.json()
    members = discord_rest.add_user_webhook(CHANNEL_ID)
    button = {"type": 2, "style": 4, "label": "Stop", "custom_id": "tomori:stop:t"}
    body = {"content": "hi", "components": [{"type": 1, "components": [button]}]}

    async def execute(webhook: dict[str, Any], query: str) -> tuple[int, Any]:
        url = f"{discord_rest.api_base}/webhooks/{webhook['id']}/{webhook['token']}?{query}"
        async with http.post(url, json=body) as response:
            return response.status, await response.json()

    status, message = await execute(owned, "wait=true")
    assert status == 200
    assert message["components"][0]["components"][0]["custom_id"] == "tomori:stop:t"
    status, message = await execute(members, "wait=true")
    assert (status, message["components"]) == (200, [])  # ignored
    status, refused = await execute(members, "wait=true&with_components=true")
    assert (status, refused["code"]) == (400, 50035)
