"""A real discord.py bot driven by dpytest, with tomori-cog loaded against a local LLM server.

dpytest fakes Discord's REST and gateway inside discord.py itself. Its guild is built here from
tests/support/world.py, with the IDs and names the nextcord fake uses, so that one test can
name the same channels and members on both libraries. What dpytest does not keep is observed
on the real call path: the payload of every message send (to see replies and allowed
mentions), typing and edits (through dpytest's callbacks), and interaction responses (dpytest
has no interactions), for which the test builds a real `discord.Interaction` that the real
command tree routes. A history read near a channel's start, which dpytest slices wrongly, is
answered as Discord answers it.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import discord
import discord.ext.test as dpytest
import discord.ext.test.backend as back
import discord.ext.test.callbacks as callbacks
import discord.ext.test.factories as facts
import discord.ext.test.runner as runner
from discord.ext import commands
from discord.webhook.async_ import AsyncWebhookAdapter

from tests.support.world import BOT_ID, CHANNEL_IDS, GUILD_ID, Person
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori_cog import add_tomori
from tomori_cog.chat import TomoriChat

_ids = itertools.count(900_000_000_000_000_000)


@dataclass
class DpyBot:
    bot: commands.Bot
    sent_payloads: list[dict[str, Any]] = field(default_factory=list)
    interaction_replies: list[dict[str, Any]] = field(default_factory=list)
    sent: asyncio.Event = field(default_factory=asyncio.Event)
    references: dict[int, int] = field(default_factory=dict)
    """The message each of the bot's messages replies to, by the bot message's ID (dpytest's
    store drops a sent message's reference)."""
    typed_in: list[int] = field(default_factory=list)
    """The channel of each "typing" the bot sent, in order."""
    edits: int = 0
    history_reads: int = 0
    """How many times a channel's history was read."""
    message_reads: int = 0
    """How many times one message was read by its ID."""
    fail_sends: Callable[[dict[str, Any]], BaseException | None] = lambda payload: None
    """Raised (if not None) instead of sending a message: Discord refusing it."""

    @property
    def channel(self) -> discord.TextChannel:
        channel = dpytest.get_config().channels[0]
        assert isinstance(channel, discord.TextChannel)
        return channel

    @property
    def member(self) -> discord.Member:
        return dpytest.get_config().members[0]

    @property
    def chat(self) -> TomoriChat:
        cog = self.bot.get_cog("Tomori")
        assert cog is not None
        return cog.chat  # type: ignore[attr-defined, no-any-return]

    def mention(self) -> str:
        assert self.bot.user is not None
        return f"<@{self.bot.user.id}>"

    async def say(
        self,
        content: str,
        member: discord.Member | None = None,
        attachments: Sequence[dict[str, Any]] = (),
    ) -> discord.Message:
        """A user posts a message; `attachments` as Discord's attachment objects (dpytest's own
        `message` would build them from file paths, with no content type or size)."""
        if not attachments:
            return await dpytest.message(
                content, channel=self.channel, member=member or self.member
            )
        state = dpytest.backend.get_state()
        files = [discord.Attachment(data=data, state=state) for data in attachments]  # type: ignore[arg-type]
        message = dpytest.backend.make_message(
            content, member or self.member, self.channel, attachments=files
        )
        await dpytest.run_all_events()
        return message

    async def settled(self) -> None:
        await self.chat.wait_idle(self.channel.id)

    async def bot_messages(self, channel_id: int | None = None) -> list[discord.Message]:
        assert self.bot.user is not None
        channel = self.channel if channel_id is None else self.bot.get_channel(channel_id)
        assert isinstance(channel, discord.TextChannel | discord.Thread)
        reads = self.history_reads
        messages = [m async for m in channel.history(limit=200)]
        self.history_reads = reads  # the test looking is not the bot reading
        messages.sort(key=lambda message: message.id)  # dpytest returns them oldest first
        return [m for m in messages if m.author.id == self.bot.user.id]

    def message_payload(
        self,
        content: str,
        author: Person,
        channel_id: int,
        *,
        message_id: int = -1,
        replying_to: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A message as Discord keeps it (built by dpytest's factory), not yet in any channel.

        A reply carries the message it replies to as Discord sends it: `replying_to`, which
        the caller gives without the message that one replies to."""
        channel = self.bot.get_channel(channel_id)
        assert channel is not None
        guild = self.channel.guild
        user = self.bot.user if author is Person.TOMORI else self.bot.get_user(author.id)
        assert user is not None
        data: dict[str, Any] = facts.make_message_dict(
            channel,  # type: ignore[arg-type]
            guild.get_member(author.id) or user,  # type: ignore[arg-type]
            message_id,
            content=content,
            mentions=[*back.find_user_mentions(content, guild)],
            guild_id=guild.id,
        )
        data["components"] = []  # dpytest leaves it out; Discord always sends it
        if replying_to is not None:
            data["type"] = 19
            data["message_reference"] = {"message_id": replying_to["id"], "channel_id": channel_id}
            data["referenced_message"] = replying_to
        return data

    def store(self, payload: dict[str, Any]) -> None:
        """Keep `payload` in its channel, where dpytest's REST fake reads history from."""
        stored(int(payload["channel_id"])).append(payload)

    def edit(self, channel_id: int, message_id: int, content: str) -> dict[str, Any]:
        """Someone edits a message: stored, and the gateway told."""
        payload = next(m for m in stored(channel_id) if int(m["id"]) == message_id)
        payload["content"] = content
        payload["edited_timestamp"] = discord.utils.utcnow().isoformat()
        # dpytest's member object lacks the roles Discord sends with it: leave it out
        update = {key: value for key, value in payload.items() if key != "member"}
        back.get_state().parse_message_update(update)  # type: ignore[arg-type]
        return payload

    def delete(self, channel_id: int, *message_ids: int) -> None:
        """Messages are deleted, one or several at once (in bulk): gone from the channel, and
        the gateway told."""
        messages = stored(channel_id)
        messages[:] = [m for m in messages if int(m["id"]) not in message_ids]
        data: dict[str, Any] = {"channel_id": str(channel_id), "guild_id": str(GUILD_ID)}
        state = back.get_state()
        if len(message_ids) == 1:
            state.parse_message_delete({**data, "id": str(message_ids[0])})  # type: ignore[typeddict-item]
        else:
            ids = [str(i) for i in message_ids]
            state.parse_message_delete_bulk({**data, "ids": ids})  # type: ignore[typeddict-item]

    def arrive(self, payload: dict[str, Any]) -> None:
        """The message arrives through the gateway: kept, parsed by discord.py, dispatched (its
        handlers run as tasks, as they would while the bot reads the gateway: nothing waits
        for them here)."""
        self.store(payload)
        back.get_state().parse_message_create(payload)  # type: ignore[arg-type]

    async def kill(
        self,
        member: discord.Member | None = None,
        permissions: int = 0,
        channel_id: int | None = None,
    ) -> dict[str, Any]:
        """Run /kill through the real command tree; return the interaction response sent."""
        data = {"id": str(next(_ids)), "name": "kill", "type": 1}
        return await self.run_command(data, member, permissions, channel_id)

    async def run_command(
        self,
        data: dict[str, Any],
        member: discord.Member | None = None,
        permissions: int = 0,
        channel_id: int | None = None,
    ) -> dict[str, Any]:
        """Run the application command `data` names (an interaction's `data` object) through
        the real command tree; return the interaction response sent."""
        user = member or self.member
        channel = self.channel if channel_id is None else self.bot.get_channel(channel_id)
        assert isinstance(channel, discord.TextChannel)
        assert self.bot.user is not None
        payload = {
            "id": str(next(_ids)),
            "application_id": str(self.bot.user.id),
            "type": 2,
            "token": "interaction-token",
            "version": 1,
            "channel_id": str(channel.id),
            "channel": {
                "id": str(channel.id),
                "type": 0,
                "name": channel.name,
                "guild_id": str(channel.guild.id),
            },
            "guild_id": str(channel.guild.id),
            "app_permissions": "2048",
            "locale": "en-US",
            "member": {
                "user": {
                    "id": str(user.id),
                    "username": user.name,
                    "discriminator": "0",
                    "avatar": None,
                    "global_name": None,
                },
                "roles": [],
                "joined_at": "2024-01-01T00:00:00+00:00",
                "permissions": str(permissions),
                "deaf": False,
                "mute": False,
                "flags": 0,
            },
            "data": data,
            "entitlements": [],
            "authorizing_integration_owners": {},
            "attachment_size_limit": 10_000_000,
        }
        interaction: discord.Interaction[commands.Bot] = discord.Interaction(
            data=payload,  # type: ignore[arg-type]
            state=self.bot._connection,
        )
        before = len(self.interaction_replies)
        await self.bot.tree._call(interaction)
        assert len(self.interaction_replies) == before + 1
        return self.interaction_replies[-1]


def stored(channel_id: int) -> list[dict[str, Any]]:
    """dpytest's store of message payloads in a channel, which its REST fake answers from."""
    config = back._cur_config
    assert config is not None
    messages: list[dict[str, Any]] = config.messages.setdefault(channel_id, [])
    return messages


_dpytest_logs_from = back.FakeHttp.logs_from


async def logs_from(
    http: back.FakeHttp,
    channel_id: int,
    limit: int,
    before: int | None = None,
    after: int | None = None,
    around: int | None = None,
) -> list[dict[str, Any]]:
    """A channel's history read as Discord answers it: dpytest's own slices from a negative
    index when fewer than `limit` messages precede `before`, and so drops the oldest; and
    reads `after` a message from that message itself (Discord's `after` leaves it out), failing
    where it is gone. Discord answers the `limit` messages just after it, newest first."""
    if after is not None and around is None:
        later = [m for m in stored(channel_id) if int(m["id"]) > int(after)][:limit]
        return later[::-1]
    if around is not None:
        answered: list[dict[str, Any]] = await _dpytest_logs_from(
            http, channel_id, limit, before=before, after=after, around=around
        )
        return answered
    messages = stored(channel_id)
    ids = [int(message["id"]) for message in messages]
    end = len(messages) if before is None else ids.index(int(before))
    return messages[max(0, end - limit) : end]


def configure_world(bot: commands.Bot) -> None:
    """dpytest's backend for `bot`, holding the guild of tests/support/world.py: its channels,
    its people as members (bots flagged as bots), and the bot itself as Tomori."""
    dpytest.configure(bot, guilds=0, text_channels=0, voice_channels=0, members=0)
    state = back.get_state()
    state.stop_dispatch()  # as dpytest builds its own guild: the bot is told nothing of it
    me = facts.make_user_dict("Tomori", "0001", None, id_num=BOT_ID, bot=True)
    state.user = discord.ClientUser(state=state, data=me)  # type: ignore[arg-type]
    guild = back.make_guild("Test Guild", id_num=GUILD_ID)
    channels: list[discord.abc.GuildChannel] = [
        back.make_text_channel(f"channel-{position}", guild, id_num=channel_id)
        for position, channel_id in enumerate(CHANNEL_IDS)
    ]
    members = []
    for number, person in enumerate(p for p in Person if p is not Person.TOMORI):
        data = facts.make_user_dict(
            person.username, number + 1, None, id_num=person.id, bot=person.is_bot
        )
        members.append(back.make_member(state.store_user(data), guild))  # type: ignore[arg-type]
    back.make_member(state.user, guild)
    # Discord gives @everyone Send Messages in Threads by default; dpytest's guild does not.
    in_threads = discord.Permissions(send_messages_in_threads=True).value
    everyone = guild.default_role
    back.update_role(everyone, permissions=everyone.permissions.value | in_threads)
    state.start_dispatch()
    runner._cur_config = runner.RunnerConfig(bot, [guild], channels, members)
    for channel_id in CHANNEL_IDS:
        stored(channel_id)


async def start_dpy_bot(
    settings: Settings, chain: ModelChain, monkeypatch: Any, extension: str | None = None
) -> DpyBot:
    """A bot with the cog; with `extension`, loaded by name (settings from the environment)."""
    intents = discord.Intents.default()
    intents.message_content = True
    intents.members = True
    bot = commands.Bot(command_prefix="//unused ", intents=intents)
    await bot._async_setup_hook()
    configure_world(bot)
    bot._connection.loop = asyncio.get_running_loop()
    harness = DpyBot(bot)

    async def counted_logs_from(http: back.FakeHttp, channel_id: int, limit: int, **at: Any) -> Any:
        harness.history_reads += 1
        return await logs_from(http, channel_id, limit, **at)

    monkeypatch.setattr(back.FakeHttp, "logs_from", counted_logs_from)

    original_send = bot.http.send_message

    async def recording_send(channel_id: int, *, params: Any) -> Any:
        # dpytest's fake finds the channel in its caller's locals: keep it there for it.
        channel = sys._getframe(1).f_locals.get("channel")  # noqa: F841
        payload = dict(params.payload or {})
        failure = harness.fail_sends(payload)
        if failure is not None:
            raise failure
        harness.sent_payloads.append(payload)
        message = await original_send(channel_id, params=params)
        reference = payload.get("message_reference")
        if reference:
            harness.references[int(message["id"])] = int(reference["message_id"])
        harness.sent.set()
        return message

    monkeypatch.setattr(bot.http, "send_message", recording_send)
    original_edit = bot.http.edit_message

    async def echoed_edit(channel_id: int, message_id: int, **fields: Any) -> Any:
        # dpytest's fake finds the message in its caller's locals: keep it there for it.
        self = sys._getframe(1).f_locals.get("self")
        if isinstance(self, discord.PartialMessage):  # an edit by ID (takes): the message itself
            self = bot._connection._get_message(message_id) or self
        data = await original_edit(channel_id, message_id, **fields)
        echo = {
            **data,
            "id": str(message_id),
            "channel_id": str(channel_id),
            "guild_id": str(GUILD_ID),
            "timestamp": discord.utils.snowflake_time(message_id).isoformat(),
        }
        # as Discord does: the gateway echoes the edit a moment after the REST answer
        asyncio.get_running_loop().call_soon(back.get_state().parse_message_update, echo)  # type: ignore[arg-type]
        return data

    monkeypatch.setattr(bot.http, "edit_message", echoed_edit)

    async def interaction_response(
        self: AsyncWebhookAdapter, interaction_id: int, token: str, **kwargs: Any
    ) -> dict[str, Any]:
        data = dict(kwargs["params"].payload or {})
        if kwargs["params"].files:
            data["files"] = {file.filename: file.fp.read() for file in kwargs["params"].files}
        harness.interaction_replies.append(data)
        flags = (data.get("data") or {}).get("flags", 0)
        return {
            "interaction": {
                "id": str(interaction_id),
                "type": 2,
                "response_message_ephemeral": bool(flags & 64),
            }
        }

    monkeypatch.setattr(AsyncWebhookAdapter, "create_interaction_response", interaction_response)

    async def typed(channel: discord.abc.Messageable) -> None:
        harness.typed_in.append(channel.id)  # type: ignore[attr-defined]

    async def edited(channel: object, message: object, fields: object) -> None:
        harness.edits += 1

    async def read_one(channel: object, message_id: int) -> None:
        harness.message_reads += 1

    callbacks.set_callback(typed, "send_typing")
    callbacks.set_callback(read_one, "get_message")
    callbacks.set_callback(edited, "edit_message")
    if extension is None:
        await add_tomori(bot, settings=settings, chain=chain)
    else:
        await bot.load_extension(extension)
    return harness


async def stop_dpy_bot(harness: DpyBot) -> None:
    await harness.bot.remove_cog("Tomori")
    await dpytest.empty_queue()
    for event in ("send_typing", "edit_message", "get_message"):
        callbacks.remove_callback(event)
