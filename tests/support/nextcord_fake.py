"""A real nextcord bot on fake Discord: gateway-style payloads in, a REST recorder out.

Everything the cog touches is nextcord's own: the Guild, TextChannel, Member, Message and
Interaction objects are built by nextcord's ConnectionState from payloads shaped like the
gateway's, and events go through nextcord's dispatch. Only `HTTPClient.request` and the
interaction-callback adapter are replaced, by a recorder that answers as Discord's REST API
does (message objects, history newest first, 403 and 404 errors) and keeps what it was sent.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import nextcord
from nextcord.ext import commands
from nextcord.http import Route
from nextcord.user import ClientUser
from nextcord.webhook.async_ import AsyncWebhookAdapter

from tests.support.world import ALICE as ALICE
from tests.support.world import BOB as BOB
from tests.support.world import BOT_ID as BOT_ID
from tests.support.world import CHANNEL_ID as CHANNEL_ID
from tests.support.world import CHANNEL_IDS as CHANNEL_IDS
from tests.support.world import GUILD_ID as GUILD_ID
from tests.support.world import MANAGE_GUILD, channel_denying_the_bot
from tests.support.world import READ_AND_SEND as READ_AND_SEND
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori_cog import add_tomori
from tomori_cog.chat import TomoriChat

_snowflakes = itertools.count(int(datetime.now(UTC).timestamp() * 1000 - 1420070400000) << 22)


def snowflake() -> int:
    return next(_snowflakes)


def user_payload(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(user_id),
        "username": name,
        "discriminator": "0",
        "avatar": None,
        "global_name": None,
        "bot": bot,
    }


def member_payload(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "user": user_payload(user_id, name, bot=bot),
        "roles": [],
        "nick": None,
        "joined_at": "2024-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
    }


def discord_error(kind: type[nextcord.HTTPException], status: int, code: int, text: str) -> Any:
    response = SimpleNamespace(status=status, reason=text)
    return kind(response, {"code": code, "message": text})  # type: ignore[arg-type]


@dataclass
class FakeDiscord:
    """Discord's REST API for one guild, as far as the cog uses it.

    What Discord stores (messages, the bodies it was sent, edits) is kept as JSON text, as a
    server keeps it: every answer is fresh JSON (nextcord mutates what it gets), and the store
    adds no objects to the garbage collector of the bot process it shares, which a real
    Discord never would. The properties below parse it for the tests to read.
    """

    bot_user: dict[str, Any]
    _messages: dict[int, list[str]] = field(default_factory=dict)
    _sent: list[str] = field(default_factory=list)
    _edits: list[str] = field(default_factory=list)
    typing: int = 0
    typed_in: list[int] = field(default_factory=list)
    """The channel of each "typing" Discord was sent, in order."""
    interaction_replies: list[dict[str, Any]] = field(default_factory=list)
    fail_sends: Callable[[dict[str, Any]], BaseException | None] = lambda body: None
    fail_edits: Callable[[dict[str, Any]], BaseException | None] = lambda body: None
    fail_interactions: Callable[[], BaseException | None] = lambda: None
    fail_typing: Callable[[], BaseException | None] = lambda: None
    fail_reads: Callable[[], BaseException | None] = lambda: None
    """Raised (if not None) by a read of messages: the channel's history, or one message."""
    send_delay: Callable[[dict[str, Any]], float] = lambda body: 0.0
    gateway: Callable[[str, dict[str, Any]], None] = lambda event, payload: None
    """Where Discord sends the gateway events its REST calls cause (the bot's own messages
    and edits, echoed a moment after the REST answer, as Discord does)."""
    echo_delay: float = 0.0
    """Seconds between a REST answer and its gateway echo (a busy gateway)."""
    history_reads: int = 0
    """How many times a channel's history was read."""
    message_reads: int = 0
    """How many times one message was read by its ID."""
    """Seconds a message create waits before Discord answers it (a 429 waited out, a slow net)."""
    sent_event: asyncio.Event = field(default_factory=asyncio.Event)
    direct: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The direct message channels Discord knows, by ID: the person at the other end."""

    @property
    def messages(self) -> dict[int, list[dict[str, Any]]]:
        return {
            channel: [json.loads(m) for m in stored] for channel, stored in self._messages.items()
        }

    @property
    def sent(self) -> list[dict[str, Any]]:
        return [json.loads(body) for body in self._sent]

    @property
    def edits(self) -> list[dict[str, Any]]:
        return [json.loads(edit) for edit in self._edits]

    async def request(self, route: Route, **kwargs: Any) -> Any:
        """Answer one REST call, as fresh JSON."""
        if route.method == "POST" and route.path.endswith("/messages"):
            await asyncio.sleep(self.send_delay(kwargs.get("json") or {}))
        answer = self._answer(route, **kwargs)
        return None if answer is None else json.loads(answer)

    def _answer(self, route: Route, **kwargs: Any) -> str | None:
        path = urlsplit(route.url).path.removeprefix("/api/v10")
        parts = path.strip("/").split("/")
        body = kwargs.get("json") or {}
        if parts[0] == "channels":
            channel_id = int(parts[1])
            rest = parts[2:]
            if not rest and route.method == "GET" and channel_id in self.direct:
                return json.dumps(
                    {"id": str(channel_id), "type": 1, "recipients": [self.direct[channel_id]]}
                )
            if rest == ["typing"] and route.method == "POST":
                failure = self.fail_typing()
                if failure is not None:
                    raise failure
                self.typing += 1
                self.typed_in.append(channel_id)
                return None
            if rest == ["messages"] and route.method == "POST":
                return json.dumps(self._create(channel_id, body))
            if rest[:1] == ["messages"] and route.method == "GET":
                failure = self.fail_reads()
                if failure is not None:
                    raise failure
            if rest == ["messages"] and route.method == "GET":
                self.history_reads += 1
                return self._history(channel_id, kwargs.get("params") or {})
            if len(rest) == 2 and rest[0] == "messages":
                self.message_reads += route.method == "GET"
                return self._one(channel_id, int(rest[1]), route.method, body)
        raise AssertionError(f"unexpected Discord call {route.method} {path}")

    def add(self, channel_id: int, payload: dict[str, Any]) -> None:
        self._messages.setdefault(channel_id, []).append(json.dumps(payload))

    def _create(self, channel_id: int, body: dict[str, Any]) -> dict[str, Any]:
        failure = self.fail_sends(body)
        if failure is not None:
            raise failure
        self._sent.append(json.dumps(body))
        payload = message_payload(
            channel_id, self.bot_user, body.get("content") or "", embeds=body.get("embeds", [])
        )
        reference = body.get("message_reference")
        if reference:
            payload["message_reference"] = reference
            payload["type"] = 19
        if channel_id in self.direct:
            del payload["guild_id"]
        self.add(channel_id, payload)
        self._echo("MESSAGE_CREATE", payload)
        self.sent_event.set()
        return payload

    def _echo(self, event: str, payload: dict[str, Any]) -> None:
        echoed = copy.deepcopy(payload)
        asyncio.get_running_loop().call_later(self.echo_delay, self.gateway, event, echoed)

    def edit(self, channel_id: int, message_id: int, content: str) -> dict[str, Any]:
        """Someone edits a message: stored, and the gateway told."""
        payload = self._stored(channel_id, message_id)
        payload["content"] = content
        payload["edited_timestamp"] = datetime.now(UTC).isoformat()
        self._replace(channel_id, payload)
        self.gateway("MESSAGE_UPDATE", copy.deepcopy(payload))
        return payload

    def delete(self, channel_id: int, *message_ids: int) -> None:
        """Messages are deleted, one or several at once (in bulk, as a moderator's tool does):
        gone from the channel, and the gateway told."""
        stored = self._messages.get(channel_id, [])
        stored[:] = [m for m in stored if int(json.loads(m)["id"]) not in message_ids]
        data: dict[str, Any] = {"channel_id": str(channel_id), "guild_id": str(GUILD_ID)}
        if len(message_ids) == 1:
            self.gateway("MESSAGE_DELETE", {**data, "id": str(message_ids[0])})
        else:
            self.gateway("MESSAGE_DELETE_BULK", {**data, "ids": [str(i) for i in message_ids]})

    def _stored(self, channel_id: int, message_id: int) -> dict[str, Any]:
        for text in self._messages.get(channel_id, []):
            payload: dict[str, Any] = json.loads(text)
            if int(payload["id"]) == message_id:
                return payload
        raise KeyError(message_id)

    def _replace(self, channel_id: int, payload: dict[str, Any]) -> None:
        stored = self._messages[channel_id]
        for index, text in enumerate(stored):
            if json.loads(text)["id"] == payload["id"]:
                stored[index] = json.dumps(payload)

    def _history(self, channel_id: int, params: dict[str, Any]) -> str:
        before = int(params["before"]) if params.get("before") else None
        after = int(params["after"]) if params.get("after") else None
        limit = int(params.get("limit", 50))
        newest_first = []
        for stored in reversed(self._messages.get(channel_id, [])):
            message_id = int(json.loads(stored)["id"])
            if (before is None or message_id < before) and (after is None or message_id > after):
                newest_first.append(stored)
        # Discord answers with newest first; `after` gives the `limit` just after it
        shown = newest_first[-limit:] if after is not None else newest_first[:limit]
        return "[" + ",".join(shown) + "]"

    def _one(self, channel_id: int, message_id: int, method: str, body: dict[str, Any]) -> str:
        stored = self._messages.get(channel_id, [])
        for index, text in enumerate(stored):
            payload = json.loads(text)
            if int(payload["id"]) == message_id:
                if method == "PATCH":
                    failure = self.fail_edits(body)
                    if failure is not None:
                        raise failure
                    payload["content"] = body.get("content", payload["content"])
                    payload["edited_timestamp"] = datetime.now(UTC).isoformat()
                    stored[index] = json.dumps(payload)
                    self._edits.append(json.dumps({"id": message_id, **body}))
                    self._echo("MESSAGE_UPDATE", payload)
                return stored[index]
        raise discord_error(nextcord.NotFound, 404, 10008, "Unknown Message")

    def contents(self, channel_id: int = CHANNEL_ID) -> list[str]:
        bot_id = self.bot_user["id"]
        return [
            m["content"]
            for m in self.messages.get(channel_id, [])
            if m["author"]["id"] == bot_id and m["content"]
        ]

    def embeds(self, channel_id: int = CHANNEL_ID) -> list[str]:
        bot_id = self.bot_user["id"]
        return [
            embed["title"]
            for m in self.messages.get(channel_id, [])
            if m["author"]["id"] == bot_id
            for embed in m["embeds"]
        ]


def message_payload(
    channel_id: int,
    author: dict[str, Any],
    content: str,
    *,
    mentions: list[dict[str, Any]] | None = None,
    embeds: list[dict[str, Any]] | None = None,
    referenced: dict[str, Any] | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": str(snowflake()),
        "channel_id": str(channel_id),
        "guild_id": str(GUILD_ID),
        "author": author,
        "content": content,
        "timestamp": datetime.now(UTC).isoformat(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentions or [],
        "mention_roles": [],
        "attachments": [],
        "embeds": embeds or [],
        "pinned": False,
        "type": 0,
        "flags": 0,
        "components": [],
    }
    if referenced is not None:
        payload["type"] = 19
        payload["message_reference"] = {
            "message_id": referenced["id"],
            "channel_id": str(channel_id),
        }
        payload["referenced_message"] = referenced
    return payload


@dataclass
class NextcordBot:
    bot: commands.Bot
    discord: FakeDiscord

    @property
    def chat(self) -> TomoriChat:
        cog = self.bot.get_cog("Tomori")
        assert cog is not None
        return cog.chat  # type: ignore[attr-defined, no-any-return]

    def mention(self) -> str:
        return f"<@{BOT_ID}>"

    def say(
        self,
        content: str,
        *,
        author: int = ALICE,
        name: str = "alice",
        bot: bool = False,
        replying_to: dict[str, Any] | None = None,
        channel: int = CHANNEL_ID,
        attachments: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A user posts a message: it arrives through nextcord's gateway event path.

        `extra` is any other field of the message object (`embeds`, `sticker_items`)."""
        mentions = [user_payload(BOT_ID, "Tomori", bot=True)] if self.mention() in content else []
        payload = message_payload(
            channel,
            user_payload(author, name, bot=bot),
            content,
            mentions=mentions,
            referenced=replying_to,
        )
        payload["attachments"] = attachments or []
        payload.update(extra or {})
        payload["member"] = {k: v for k, v in member_payload(author, name).items() if k != "user"}
        self.discord.add(channel, payload)
        self.bot._connection.parsers["MESSAGE_CREATE"](copy.deepcopy(payload))
        return payload

    def say_directly(self, content: str, *, author: int, name: str, channel: int) -> dict[str, Any]:
        """A person writes to the bot in a direct message (`channel`): no guild, no member."""
        person = user_payload(author, name)
        self.discord.direct[channel] = person
        payload = message_payload(channel, person, content)
        del payload["guild_id"]
        self.discord.add(channel, payload)
        self.bot._connection.parsers["MESSAGE_CREATE"](copy.deepcopy(payload))
        return payload

    async def settled(self, channels: tuple[int, ...] = CHANNEL_IDS) -> None:
        """Wait for nextcord's event tasks (the listener admitting the message), then the turns."""
        current = asyncio.current_task()
        events = [
            task
            for task in asyncio.all_tasks()
            if task is not current and task.get_name().startswith("nextcord:")
        ]
        await asyncio.gather(*events, return_exceptions=True)
        for channel in channels:
            await self.chat.wait_idle(channel)

    def kill_payload(
        self,
        *,
        user: int = ALICE,
        name: str = "alice",
        permissions: int = 0,
        channel: int = CHANNEL_ID,
    ) -> dict[str, Any]:
        """The INTERACTION_CREATE Discord sends when `user` runs /kill in the channel."""
        return {
            "id": str(snowflake()),
            "application_id": str(BOT_ID),
            "type": 2,
            "token": "interaction-token",
            "version": 1,
            "channel_id": str(channel),
            "guild_id": str(GUILD_ID),
            "locale": "en-US",
            "app_permissions": str(READ_AND_SEND),
            "member": {
                **member_payload(user, name),
                "permissions": str(permissions | READ_AND_SEND),
            },
            "data": {"id": str(snowflake()), "name": "kill", "type": 1},  # a global command
        }

    async def kill(
        self,
        *,
        user: int = ALICE,
        name: str = "alice",
        permissions: int = 0,
        channel: int = CHANNEL_ID,
    ) -> dict[str, Any]:
        """/kill through nextcord's interaction path; return what was answered."""
        payload = self.kill_payload(user=user, name=name, permissions=permissions, channel=channel)
        before = len(self.discord.interaction_replies)
        self.bot._connection.parse_interaction_create(payload)
        async with asyncio.timeout(5):
            while len(self.discord.interaction_replies) == before:  # noqa: ASYNC110
                await asyncio.sleep(0.005)
        return self.discord.interaction_replies[-1]

    async def respond(self, prompt: str, *, channel: int = CHANNEL_ID) -> dict[str, Any]:
        """/respond with `prompt`, by alice with Manage Server (whom it is for by default),
        through nextcord's interaction path; return what she was answered at once."""
        payload = self.kill_payload(permissions=MANAGE_GUILD, channel=channel)
        options = [{"name": "prompt", "type": 3, "value": prompt}]
        payload["data"] = {"id": str(snowflake()), "name": "respond", "type": 1, "options": options}
        before = len(self.discord.interaction_replies)
        self.bot._connection.parse_interaction_create(payload)
        async with asyncio.timeout(10):
            while len(self.discord.interaction_replies) == before:  # noqa: ASYNC110
                await asyncio.sleep(0.005)
        return self.discord.interaction_replies[-1]


def guild_payload(channel_ids: tuple[int, ...] = CHANNEL_IDS) -> dict[str, Any]:
    return {
        "id": str(GUILD_ID),
        "name": "Test Guild",
        "owner_id": str(ALICE),
        "roles": [
            {
                "id": str(GUILD_ID),
                "name": "@everyone",
                "permissions": str(READ_AND_SEND),
                "position": 0,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
            }
        ],
        "channels": [
            {
                "id": str(channel),
                "type": 0,
                "name": f"channel-{position}",
                "position": position,
                "permission_overwrites": [],
                "guild_id": str(GUILD_ID),
            }
            for position, channel in enumerate(channel_ids)
        ],
        "members": [
            member_payload(BOT_ID, "Tomori", bot=True),
            member_payload(ALICE, "alice"),
            member_payload(BOB, "bob"),
        ],
        "emojis": [],
        "stickers": [],
        "features": [],
        "member_count": 3,
        "large": False,
        "unavailable": False,
        "preferred_locale": "en-US",
    }


async def start_nextcord_bot(
    settings: Settings,
    chain: ModelChain,
    monkeypatch: Any,
    messages: list[dict[str, Any]] | None = None,
    channel_ids: tuple[int, ...] = CHANNEL_IDS,
    extension: str | None = None,
) -> NextcordBot:
    """A started bot; `messages` are already in the channel when the cog starts.

    With `extension`, the cog comes from `bot.load_extension(extension)`, which reads the
    settings and the chain from the environment, instead of from `add_tomori`.
    """
    intents = nextcord.Intents.default()
    intents.message_content = True
    intents.members = True
    bot = commands.Bot(intents=intents)
    state = bot._connection
    bot_user = user_payload(BOT_ID, "Tomori", bot=True)
    state.user = ClientUser(state=state, data=bot_user)  # type: ignore[arg-type]
    state.application_id = BOT_ID  # READY would tell it
    state._add_guild_from_data(guild_payload(channel_ids))  # type: ignore[arg-type]
    fake = FakeDiscord(bot_user)
    parsers = {
        "MESSAGE_CREATE": state.parse_message_create,
        "MESSAGE_UPDATE": state.parse_message_update,
        "MESSAGE_DELETE": state.parse_message_delete,
        "MESSAGE_DELETE_BULK": state.parse_message_delete_bulk,
    }
    fake.gateway = lambda event, payload: parsers[event](payload)
    for payload in messages or []:
        fake.add(int(payload["channel_id"]), payload)
    monkeypatch.setattr(bot.http, "request", fake.request)

    async def interaction_response(
        self: AsyncWebhookAdapter, interaction_id: int, token: str, **kwargs: Any
    ) -> None:
        failure = fake.fail_interactions()
        if failure is not None:
            raise failure
        reply = {"type": kwargs["type"], "data": kwargs.get("data") or {}}
        if kwargs.get("files"):
            reply["files"] = {file.filename: file.fp.read() for file in kwargs["files"]}
        fake.interaction_replies.append(reply)

    monkeypatch.setattr(AsyncWebhookAdapter, "create_interaction_response", interaction_response)
    if extension is None:
        add_tomori(bot, settings=settings, chain=chain)
    else:
        bot.load_extension(extension)
    harness = NextcordBot(bot, fake)
    await harness.chat.ensure_started()
    return harness


OpenNextcord = Callable[[Settings, ModelChain], Awaitable[NextcordBot]]
"""The `open_nextcord` fixture: start a bot that is stopped when the test ends."""


async def stop_nextcord_bot(harness: NextcordBot) -> None:
    cog = harness.bot.get_cog("Tomori")
    harness.bot.remove_cog("Tomori")
    closing = getattr(cog, "closing", None)
    if closing is not None:
        await closing


def deny_send(nc: NextcordBot, permission: int) -> None:
    """An admin denies the bot a permission in the channel: Discord tells the gateway."""
    nc.bot._connection.parse_channel_update(channel_denying_the_bot(permission))
