"""A real discord.py bot driven by dpytest, with tomori-cog loaded against a local LLM server.

dpytest fakes Discord's REST and gateway inside discord.py itself. Two things it does not keep
are observed here on the real call path: the payload of every message send (to see replies and
allowed mentions) and interaction responses (dpytest has no interactions), for which the test
builds a real `discord.Interaction` that the real command tree routes.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import discord
import discord.ext.test as dpytest
from discord.ext import commands
from discord.webhook.async_ import AsyncWebhookAdapter

from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori_cog import add_tomori
from tomori_cog.service import TomoriService

_ids = itertools.count(900_000_000_000_000_000)


@dataclass
class DpyBot:
    bot: commands.Bot
    sent_payloads: list[dict[str, Any]] = field(default_factory=list)
    interaction_replies: list[dict[str, Any]] = field(default_factory=list)
    sent: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def channel(self) -> discord.TextChannel:
        channel = dpytest.get_config().channels[0]
        assert isinstance(channel, discord.TextChannel)
        return channel

    @property
    def member(self) -> discord.Member:
        return dpytest.get_config().members[0]

    @property
    def service(self) -> TomoriService:
        cog = self.bot.get_cog("Tomori")
        assert cog is not None
        return cog.service  # type: ignore[attr-defined, no-any-return]

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
        await self.service.wait_idle(self.channel.id)

    async def bot_messages(self) -> list[discord.Message]:
        assert self.bot.user is not None
        messages = [m async for m in self.channel.history(limit=200)]
        messages.sort(key=lambda message: message.id)  # dpytest returns them oldest first
        return [m for m in messages if m.author.id == self.bot.user.id]

    async def kill(
        self, member: discord.Member | None = None, permissions: int = 0
    ) -> dict[str, Any]:
        """Run /kill through the real command tree; return the interaction response sent."""
        data = {"id": str(next(_ids)), "name": "kill", "type": 1}
        return await self.run_command(data, member, permissions)

    async def run_command(
        self, data: dict[str, Any], member: discord.Member | None = None, permissions: int = 0
    ) -> dict[str, Any]:
        """Run the application command `data` names (an interaction's `data` object) through
        the real command tree; return the interaction response sent."""
        user = member or self.member
        assert self.bot.user is not None
        payload = {
            "id": str(next(_ids)),
            "application_id": str(self.bot.user.id),
            "type": 2,
            "token": "interaction-token",
            "version": 1,
            "channel_id": str(self.channel.id),
            "channel": {
                "id": str(self.channel.id),
                "type": 0,
                "name": self.channel.name,
                "guild_id": str(self.channel.guild.id),
            },
            "guild_id": str(self.channel.guild.id),
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


async def start_dpy_bot(
    settings: Settings, chain: ModelChain, monkeypatch: Any, extension: str | None = None
) -> DpyBot:
    """A bot with the cog; with `extension`, loaded by name (settings from the environment)."""
    intents = discord.Intents.default()
    intents.message_content = True
    intents.members = True
    bot = commands.Bot(command_prefix="//unused ", intents=intents)
    await bot._async_setup_hook()
    dpytest.configure(bot)
    bot._connection.loop = asyncio.get_running_loop()
    # Discord gives @everyone Send Messages in Threads by default; dpytest's guild does not.
    everyone = dpytest.get_config().guilds[0].default_role
    in_threads = discord.Permissions(send_messages_in_threads=True).value
    dpytest.backend.update_role(everyone, permissions=everyone.permissions.value | in_threads)
    harness = DpyBot(bot)

    original_send = bot.http.send_message

    async def recording_send(channel_id: int, *, params: Any) -> Any:
        # dpytest's fake finds the channel in its caller's locals: keep it there for it.
        channel = sys._getframe(1).f_locals.get("channel")  # noqa: F841
        harness.sent_payloads.append(dict(params.payload or {}))
        message = await original_send(channel_id, params=params)
        harness.sent.set()
        return message

    monkeypatch.setattr(bot.http, "send_message", recording_send)

    async def interaction_response(
        self: AsyncWebhookAdapter, interaction_id: int, token: str, **kwargs: Any
    ) -> dict[str, Any]:
        data = dict(kwargs["params"].payload or {})
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
    if extension is None:
        await add_tomori(bot, settings=settings, chain=chain)
    else:
        await bot.load_extension(extension)
    return harness


async def stop_dpy_bot(harness: DpyBot) -> None:
    await harness.bot.remove_cog("Tomori")
    await dpytest.empty_queue()
