"""The bot under test, whichever Discord library runs it: what a test does as a user does it,
and what the channel then shows.

`ChatBot` is what a test written once for both libraries talks to; `NextcordChat` (on the REST
recorder of tests/support/nextcord_fake.py) and `DiscordpyChat` (on dpytest, through
tests/support/dpy.py) implement it, in the one guild of tests/support/world.py. Where the
libraries differ (how a message arrives and when the bot is done with it, the shape of what
was sent or registered) the implementation hides it, so that the test asserts once what a
user would see. The `library` and `open_bot` fixtures (tests/conftest.py) run a test on each.
"""

from __future__ import annotations

import asyncio
import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Literal

import discord
import discord.ext.test as dpytest
import discord.ext.test.backend as back
import discord.ext.test.factories as facts
import nextcord
import pytest

from tests.support.conversation import (
    forum_payload,
    quoted,
    staff_channel_payload,
    thread_payload,
)
from tests.support.dpy import DpyBot, start_dpy_bot, stop_dpy_bot, stored
from tests.support.nextcord_fake import (
    NextcordBot,
    deny_send,
    discord_error,
    message_payload,
    snowflake,
    start_nextcord_bot,
    stop_nextcord_bot,
    user_payload,
)
from tests.support.tomori_commands import dpy_tomori, nextcord_tomori
from tests.support.world import (
    BOT_ID,
    CHANNEL_ID,
    CHANNEL_IDS,
    GUILD_ID,
    Person,
    bot_timed_out_for_an_hour,
    channel_denying_the_bot,
)
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori_cog.chat import TomoriChat

Library = Literal["nextcord", "discordpy"]
DIRECT_MESSAGES_BASE = 4_000_000_000_000_000_000
"""Where the nextcord harness numbers a person's direct message channel with the bot."""
LIBRARIES: tuple[Library, ...] = ("nextcord", "discordpy")


def only_on(library: Library, why: str) -> pytest.MarkDecorator:
    """Run a test on one library only; `why` says what the other's test bot cannot do."""
    assert why
    return pytest.mark.parametrize("library", [library])


@dataclass(frozen=True)
class Posted:
    """A message in a channel, as Discord keeps it (`payload`, in the fake's own JSON)."""

    id: int
    channel: int
    payload: dict[str, Any]


@dataclass(frozen=True)
class Shown:
    """One of the bot's messages as the channel shows it now, edits included."""

    id: int
    content: str
    embeds: list[dict[str, Any]]
    reply_to: int | None
    """The message it replies to, if it is a reply."""


@dataclass(frozen=True)
class Sent:
    """A message the bot asked Discord to create, as it asked."""

    content: str
    allowed_mentions: dict[str, Any]
    reply_to: int | None


@dataclass(frozen=True)
class Registered:
    """An application command as the bot registers it with Discord."""

    default_member_permissions: int
    """0: none are needed (Discord's null)."""
    guild_only: bool
    options: frozenset[str]


def guild_only(payload: dict[str, Any]) -> bool:
    """Whether a registered command is for servers only (`contexts`; before it, discord.py's
    `dm_permission`)."""
    if payload.get("contexts") is not None:
        return bool(payload["contexts"] == [0])
    return payload.get("dm_permission") is False


class ChatBot(ABC):
    """A started bot with the cog, in the guild of tests/support/world.py."""

    library: Library

    @property
    @abstractmethod
    def chat(self) -> TomoriChat: ...

    def mention(self) -> str:
        return f"<@{Person.TOMORI.id}>"

    # -- what a user does ---------------------------------------------------------------------

    @abstractmethod
    async def say(
        self,
        content: str,
        *,
        by: Person = Person.ALICE,
        channel: int = CHANNEL_ID,
        replying_to: Posted | None = None,
        attachments: Sequence[dict[str, Any]] = (),
        extra: dict[str, Any] | None = None,
    ) -> Posted:
        """`by` posts a message; it arrives through the library's gateway path. `attachments`
        are Discord's attachment objects; `extra` any other field (`embeds`, `sticker_items`)."""

    @abstractmethod
    async def say_directly(self, content: str, *, by: Person = Person.ALICE) -> int:
        """`by` writes to the bot in a direct message, through the library's gateway path, and
        the bot's turn there ends; return the direct message channel's ID."""

    @abstractmethod
    def seed(
        self,
        content: str,
        *,
        by: Person = Person.ALICE,
        channel: int = CHANNEL_ID,
        replying_to: Posted | None = None,
        parent_deleted: bool = False,
        embeds: list[dict[str, Any]] | None = None,
        message_id: int | None = None,
    ) -> Posted:
        """A message already in the channel before the test's trigger (no event: nobody asked).
        With `parent_deleted`, it replies to `replying_to` as Discord shows a reply whose
        parent was deleted (the reference, without the message)."""

    @abstractmethod
    def unstored(self, content: str, *, by: Person = Person.ALICE) -> Posted:
        """A message no channel holds any more: one deleted long ago."""

    @abstractmethod
    async def edit(self, posted: Posted, content: str) -> Posted:
        """Its author edits a message: Discord keeps the new text and the gateway says so.
        Returns the message as it now is (to reply to it)."""

    @abstractmethod
    async def delete(self, *posted: Posted) -> None:
        """Messages of one channel are deleted (several: in bulk): gone from the channel, and
        the gateway says so."""

    async def reconnect(self) -> None:
        """The gateway connection drops and resumes."""
        await self.gateway_event("disconnect")
        await self.gateway_event("resumed")

    async def gateway_event(self, event: str) -> None:
        """The library dispatches `event` (its name without `on_`) as the gateway would send
        it, about the test's guild: `ready`, `disconnect`, `resumed`, `shard_ready`, `guild_join`,
        `guild_available`, `guild_role_update` (@everyone) or `member_update` (the bot)."""
        client = self.client
        guild = client.get_guild(GUILD_ID)
        arguments = {
            "ready": (),
            "disconnect": (),
            "resumed": (),
            "shard_ready": (0,),
            "guild_join": (guild,),
            "guild_available": (guild,),
            "guild_role_update": (guild.default_role, guild.default_role),
            "member_update": (guild.me, guild.me),
        }[event]
        client.dispatch(event, *arguments)
        await self.admitted()

    @property
    @abstractmethod
    def client(self) -> Any:
        """The library's bot."""

    @abstractmethod
    async def kill(
        self, *, by: Person = Person.ALICE, permissions: int = 0, channel: int = CHANNEL_ID
    ) -> dict[str, Any]:
        """`by` runs /kill; return the interaction response (`type`, `data`)."""

    @abstractmethod
    async def tomori(
        self, subcommand: str, *, channel: int = CHANNEL_ID, **options: Any
    ) -> dict[str, Any]:
        """`/tomori <subcommand>` by a member with Manage Server; return what was answered."""

    @abstractmethod
    async def memory(
        self, subcommand: str, *, by: Person = Person.ALICE, **options: Any
    ) -> dict[str, Any]:
        """`by` (no permissions) runs `/memory <subcommand>`; return what was answered, with
        any file it carried under "files" (name: bytes)."""

    # -- what happens to the guild ------------------------------------------------------------

    @abstractmethod
    def deny(self, permission: int) -> None:
        """An admin denies the bot `permission` in the channel."""

    @abstractmethod
    def time_out(self) -> None:
        """A moderator times the bot out for an hour."""

    @abstractmethod
    def forbid_sends(self, code: int, text: str) -> None:
        """Discord refuses every message the bot sends with a 403 (`code`, `text`)."""

    @abstractmethod
    def allow_sends(self) -> None: ...

    @abstractmethod
    def open_thread(
        self, thread_id: int, parent: int = CHANNEL_ID, *, private: bool = False
    ) -> None:
        """The gateway announces a thread (or a forum post) the bot can see; Alice made it."""

    @abstractmethod
    def open_staff_channel(self, channel_id: int) -> None:
        """The gateway announces a channel @everyone cannot see; the bot and Alice (a
        moderator) can."""

    @abstractmethod
    def open_forum(self, forum_id: int) -> None:
        """The gateway announces a forum channel."""

    @abstractmethod
    def new_id(self) -> int:
        """A fresh snowflake, later than every message so far."""

    # -- waiting ------------------------------------------------------------------------------

    @abstractmethod
    async def admitted(self) -> None:
        """Wait until the library's event handlers are done: every message so far was
        admitted (or refused) by the listener."""

    @abstractmethod
    async def settled(self, *channels: int) -> None:
        """Wait until every message so far was admitted and the channels' turns all ended
        (every channel of the guild unless given)."""

    @property
    @abstractmethod
    def sent_event(self) -> asyncio.Event:
        """Set when the bot sends a message."""

    # -- what the channel shows ---------------------------------------------------------------

    @abstractmethod
    async def messages(self, channel: int = CHANNEL_ID) -> list[Shown]:
        """The bot's messages in `channel`, oldest first."""

    async def contents(self, channel: int = CHANNEL_ID) -> list[str]:
        """The text of the bot's messages that have text."""
        return [m.content for m in await self.messages(channel) if m.content]

    async def embeds(self, channel: int = CHANNEL_ID) -> list[str]:
        """The titles of the bot's embeds (its notices)."""
        return [e.get("title") or "" for m in await self.messages(channel) for e in m.embeds]

    @abstractmethod
    def find(self, content: str, channel: int = CHANNEL_ID) -> Posted:
        """The bot's message with `content`, as Discord keeps it (to reply to it)."""

    @property
    @abstractmethod
    def sent(self) -> list[Sent]:
        """Every message create the bot sent, in order (refused ones excepted)."""

    @property
    @abstractmethod
    def edits(self) -> int:
        """How many message edits the bot sent."""

    @property
    @abstractmethod
    def history_reads(self) -> int:
        """How many times the bot read a channel's history from Discord."""

    @property
    @abstractmethod
    def message_reads(self) -> int:
        """How many times the bot read one message by its ID from Discord."""

    @property
    @abstractmethod
    def typing(self) -> list[int]:
        """The channel of each "typing" the bot triggered, in order."""

    def registered(self, name: str) -> Registered:
        """The application command `name` as the bot registers it."""
        payload = self.payload(name)
        return Registered(
            default_member_permissions=int(payload.get("default_member_permissions") or 0),
            guild_only=guild_only(payload),
            options=frozenset(option["name"] for option in payload["options"]),
        )

    @abstractmethod
    def payload(self, name: str) -> dict[str, Any]:
        """The JSON the bot's library registers with Discord for the command `name`."""

    @abstractmethod
    def command_names(self) -> set[str]:
        """The top-level application commands the bot registers."""

    @abstractmethod
    async def stop(self) -> None:
        """Remove the cog, as unloading the extension does; stopping twice does nothing."""


def _sent(body: dict[str, Any]) -> Sent:
    reference = body.get("message_reference")
    return Sent(
        content=body.get("content") or "",
        allowed_mentions=body.get("allowed_mentions") or {},
        reply_to=int(reference["message_id"]) if reference else None,
    )


class NextcordChat(ChatBot):
    """A nextcord bot on the REST recorder: gateway payloads in, what Discord stored out."""

    library: Library = "nextcord"

    def __init__(self, nc: NextcordBot) -> None:
        self.nc = nc
        self._stopped = False

    @property
    def chat(self) -> TomoriChat:
        return self.nc.chat

    async def say(
        self,
        content: str,
        *,
        by: Person = Person.ALICE,
        channel: int = CHANNEL_ID,
        replying_to: Posted | None = None,
        attachments: Sequence[dict[str, Any]] = (),
        extra: dict[str, Any] | None = None,
    ) -> Posted:
        payload = self.nc.say(
            content,
            author=by.id,
            name=by.username,
            bot=by.is_bot,
            replying_to=None if replying_to is None else quoted(replying_to.payload),
            channel=channel,
            attachments=list(attachments),
            extra=extra,
        )
        return Posted(int(payload["id"]), channel, payload)

    async def say_directly(self, content: str, *, by: Person = Person.ALICE) -> int:
        channel = DIRECT_MESSAGES_BASE + by.id % 1_000_000
        self.nc.say_directly(content, author=by.id, name=by.username, channel=channel)
        await self.nc.settled((channel,))
        return channel

    def seed(
        self,
        content: str,
        *,
        by: Person = Person.ALICE,
        channel: int = CHANNEL_ID,
        replying_to: Posted | None = None,
        parent_deleted: bool = False,
        embeds: list[dict[str, Any]] | None = None,
        message_id: int | None = None,
    ) -> Posted:
        payload = message_payload(
            channel,
            user_payload(by.id, by.username, bot=by.is_bot),
            content,
            embeds=embeds,
            referenced=None if replying_to is None else quoted(replying_to.payload),
        )
        if parent_deleted:
            payload["referenced_message"] = None
        if message_id is not None:
            payload["id"] = str(message_id)
        self.nc.discord.add(channel, payload)
        return Posted(int(payload["id"]), channel, payload)

    def unstored(self, content: str, *, by: Person = Person.ALICE) -> Posted:
        payload = message_payload(CHANNEL_ID, user_payload(by.id, by.username), content)
        return Posted(int(payload["id"]), CHANNEL_ID, payload)

    async def edit(self, posted: Posted, content: str) -> Posted:
        payload = self.nc.discord.edit(posted.channel, posted.id, content)
        await self.admitted()
        return Posted(posted.id, posted.channel, payload)

    async def delete(self, *posted: Posted) -> None:
        self.nc.discord.delete(posted[0].channel, *(message.id for message in posted))
        await self.admitted()

    @property
    def client(self) -> Any:
        return self.nc.bot

    async def kill(
        self, *, by: Person = Person.ALICE, permissions: int = 0, channel: int = CHANNEL_ID
    ) -> dict[str, Any]:
        return await self.nc.kill(
            user=by.id, name=by.username, permissions=permissions, channel=channel
        )

    async def tomori(
        self, subcommand: str, *, channel: int = CHANNEL_ID, **options: Any
    ) -> dict[str, Any]:
        return await nextcord_tomori(self.nc, subcommand, channel=channel, **options)

    async def memory(
        self, subcommand: str, *, by: Person = Person.ALICE, **options: Any
    ) -> dict[str, Any]:
        return await nextcord_tomori(
            self.nc, subcommand, top="memory", user=(by.id, by.username), permissions=0, **options
        )

    def deny(self, permission: int) -> None:
        deny_send(self.nc, permission)

    def time_out(self) -> None:
        self.nc.bot._connection.parse_guild_member_update(bot_timed_out_for_an_hour())

    def forbid_sends(self, code: int, text: str) -> None:
        error = discord_error(nextcord.Forbidden, 403, code, text)
        self.nc.discord.fail_sends = lambda body: error

    def allow_sends(self) -> None:
        self.nc.discord.fail_sends = lambda body: None

    def open_thread(
        self, thread_id: int, parent: int = CHANNEL_ID, *, private: bool = False
    ) -> None:
        state = self.nc.bot._connection
        payload = thread_payload(thread_id, GUILD_ID, parent, Person.ALICE.id, private=private)
        state.parse_thread_create(payload)

    def open_staff_channel(self, channel_id: int) -> None:
        state = self.nc.bot._connection
        state.parse_channel_create(
            staff_channel_payload(channel_id, GUILD_ID, BOT_ID, Person.ALICE.id)
        )

    def open_forum(self, forum_id: int) -> None:
        self.nc.bot._connection.parse_channel_create(forum_payload(forum_id, GUILD_ID))

    def new_id(self) -> int:
        return snowflake()

    async def admitted(self) -> None:
        await self.nc.settled(())

    async def settled(self, *channels: int) -> None:
        await self.nc.settled(channels or CHANNEL_IDS)

    @property
    def sent_event(self) -> asyncio.Event:
        return self.nc.discord.sent_event

    async def messages(self, channel: int = CHANNEL_ID) -> list[Shown]:
        shown = []
        for m in self.nc.discord.messages.get(channel, []):
            if int(m["author"]["id"]) == Person.TOMORI.id:
                reference = m.get("message_reference")
                reply_to = int(reference["message_id"]) if reference else None
                shown.append(Shown(int(m["id"]), m["content"], m["embeds"], reply_to))
        return shown

    def find(self, content: str, channel: int = CHANNEL_ID) -> Posted:
        payload = next(m for m in self.nc.discord.messages[channel] if m["content"] == content)
        return Posted(int(payload["id"]), channel, payload)

    @property
    def sent(self) -> list[Sent]:
        return [_sent(body) for body in self.nc.discord.sent]

    @property
    def edits(self) -> int:
        return len(self.nc.discord.edits)

    @property
    def history_reads(self) -> int:
        return self.nc.discord.history_reads

    @property
    def message_reads(self) -> int:
        return self.nc.discord.message_reads

    @property
    def typing(self) -> list[int]:
        return self.nc.discord.typed_in

    def payload(self, name: str) -> dict[str, Any]:
        command = next(c for c in self.nc.bot.get_all_application_commands() if c.name == name)
        payload: dict[str, Any] = command.get_payload(None)
        return payload

    def command_names(self) -> set[str]:
        return {str(command.name) for command in self.nc.bot.get_all_application_commands()}

    async def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            await stop_nextcord_bot(self.nc)


class DiscordpyChat(ChatBot):
    """A discord.py bot on dpytest: its backend stores the payloads, discord.py parses them."""

    library: Library = "discordpy"

    def __init__(self, dpy: DpyBot) -> None:
        self.dpy = dpy
        self._stopped = False

    @property
    def chat(self) -> TomoriChat:
        return self.dpy.chat

    def _quoted(self, replying_to: Posted | None) -> dict[str, Any] | None:
        if replying_to is None:
            return None
        return {"components": [], **quoted(replying_to.payload)}

    async def say(
        self,
        content: str,
        *,
        by: Person = Person.ALICE,
        channel: int = CHANNEL_ID,
        replying_to: Posted | None = None,
        attachments: Sequence[dict[str, Any]] = (),
        extra: dict[str, Any] | None = None,
    ) -> Posted:
        payload = self.dpy.message_payload(
            content, by, channel, replying_to=self._quoted(replying_to)
        )
        payload["attachments"] = list(attachments)
        payload.update(extra or {})
        self.dpy.arrive(payload)
        return Posted(int(payload["id"]), channel, payload)

    async def say_directly(self, content: str, *, by: Person = Person.ALICE) -> int:
        member = self._member(by)
        channel = await member.create_dm()
        await dpytest.message(content, channel=channel, member=member)
        await self.chat.wait_idle(channel.id)
        return channel.id

    def seed(
        self,
        content: str,
        *,
        by: Person = Person.ALICE,
        channel: int = CHANNEL_ID,
        replying_to: Posted | None = None,
        parent_deleted: bool = False,
        embeds: list[dict[str, Any]] | None = None,
        message_id: int | None = None,
    ) -> Posted:
        payload = self.dpy.message_payload(
            content,
            by,
            channel,
            message_id=-1 if message_id is None else message_id,
            replying_to=self._quoted(replying_to),
        )
        payload["embeds"] = embeds or []
        if parent_deleted:
            payload["referenced_message"] = None
        self.dpy.store(payload)
        return Posted(int(payload["id"]), channel, payload)

    def unstored(self, content: str, *, by: Person = Person.ALICE) -> Posted:
        payload = self.dpy.message_payload(content, by, CHANNEL_ID)
        return Posted(int(payload["id"]), CHANNEL_ID, payload)

    async def edit(self, posted: Posted, content: str) -> Posted:
        payload = self.dpy.edit(posted.channel, posted.id, content)
        await self.admitted()
        return Posted(posted.id, posted.channel, payload)

    async def delete(self, *posted: Posted) -> None:
        self.dpy.delete(posted[0].channel, *(message.id for message in posted))
        await self.admitted()

    @property
    def client(self) -> Any:
        return self.dpy.bot

    def _member(self, person: Person) -> discord.Member:
        member = self.dpy.channel.guild.get_member(person.id)
        assert member is not None
        return member

    async def kill(
        self, *, by: Person = Person.ALICE, permissions: int = 0, channel: int = CHANNEL_ID
    ) -> dict[str, Any]:
        return await self.dpy.kill(self._member(by), permissions, channel)

    async def tomori(
        self, subcommand: str, *, channel: int = CHANNEL_ID, **options: Any
    ) -> dict[str, Any]:
        return await dpy_tomori(self.dpy, subcommand, channel=channel, **options)

    async def memory(
        self, subcommand: str, *, by: Person = Person.ALICE, **options: Any
    ) -> dict[str, Any]:
        member = self._member(by)
        return await dpy_tomori(
            self.dpy, subcommand, top="memory", member=member, permissions=0, **options
        )

    def deny(self, permission: int) -> None:
        back.get_state().parse_channel_update(channel_denying_the_bot(permission))

    def time_out(self) -> None:
        back.get_state().parse_guild_member_update(bot_timed_out_for_an_hour())  # type: ignore[arg-type]

    def forbid_sends(self, code: int, text: str) -> None:
        response = SimpleNamespace(status=403, reason="Forbidden")
        error = discord.Forbidden(response, {"code": code, "message": text})  # type: ignore[arg-type]
        self.dpy.fail_sends = lambda payload: error

    def allow_sends(self) -> None:
        self.dpy.fail_sends = lambda payload: None

    def open_thread(
        self, thread_id: int, parent: int = CHANNEL_ID, *, private: bool = False
    ) -> None:
        payload = thread_payload(thread_id, GUILD_ID, parent, Person.ALICE.id, private=private)
        back.get_state().parse_thread_create(payload)  # type: ignore[arg-type]
        stored(thread_id)

    def open_staff_channel(self, channel_id: int) -> None:
        payload = staff_channel_payload(channel_id, GUILD_ID, BOT_ID, Person.ALICE.id)
        back.get_state().parse_channel_create(payload)
        stored(channel_id)

    def open_forum(self, forum_id: int) -> None:
        back.get_state().parse_channel_create(forum_payload(forum_id, GUILD_ID))

    def new_id(self) -> int:
        made: int = facts.make_id()
        return made

    async def admitted(self) -> None:
        await dpytest.run_all_events()

    async def settled(self, *channels: int) -> None:
        await dpytest.run_all_events()
        for channel in channels or CHANNEL_IDS:
            await self.chat.wait_idle(channel)

    @property
    def sent_event(self) -> asyncio.Event:
        return self.dpy.sent

    async def messages(self, channel: int = CHANNEL_ID) -> list[Shown]:
        return [
            Shown(
                m.id,
                m.content,
                [embed.to_dict() for embed in m.embeds],  # type: ignore[misc]
                self.dpy.references.get(m.id),
            )
            for m in await self.dpy.bot_messages(channel)
        ]

    def find(self, content: str, channel: int = CHANNEL_ID) -> Posted:
        payload = next(m for m in stored(channel) if m["content"] == content)
        return Posted(int(payload["id"]), channel, payload)

    @property
    def sent(self) -> list[Sent]:
        return [_sent(payload) for payload in self.dpy.sent_payloads]

    @property
    def edits(self) -> int:
        return self.dpy.edits

    @property
    def history_reads(self) -> int:
        return self.dpy.history_reads

    @property
    def message_reads(self) -> int:
        return self.dpy.message_reads

    @property
    def typing(self) -> list[int]:
        return self.dpy.typed_in

    def payload(self, name: str) -> dict[str, Any]:
        command = next(c for c in self.dpy.bot.tree.get_commands() if c.name == name)
        takes_tree = bool(inspect.signature(command.to_dict).parameters)  # not before 2.4
        tree = self.dpy.bot.tree
        payload: dict[str, Any] = (
            command.to_dict(tree) if takes_tree else command.to_dict()  # type: ignore[call-arg]
        )
        return payload

    def command_names(self) -> set[str]:
        return {command.name for command in self.dpy.bot.tree.get_commands()}

    async def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            await stop_dpy_bot(self.dpy)


async def start_bot(
    library: Library, settings: Settings, chain: ModelChain, monkeypatch: pytest.MonkeyPatch
) -> ChatBot:
    """A started bot of `library` with the cog, in the guild of tests/support/world.py."""
    if library == "nextcord":
        return NextcordChat(await start_nextcord_bot(settings, chain, monkeypatch))
    return DiscordpyChat(await start_dpy_bot(settings, chain, monkeypatch))


OpenBot = Callable[[Settings, ModelChain], Awaitable[ChatBot]]
"""The `open_bot` fixture: start a bot of the test's library, stopped when the test ends."""
