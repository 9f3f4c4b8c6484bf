"""A real nextcord or discord.py bot with the cog, whose HTTP client talks to the faithful server.

Nothing of the library is replaced: the bot logs in over HTTP (`GET /users/@me`) against a
`DiscordRestServer` (tests/support/discord_rest.py), and every request the cog makes (message
creates and edits, typing, history, interaction callbacks) goes through the library's own
`HTTPClient`, its rate-limit handling included, over a real socket. Only the gateway is
missing: the guild of tests/support/world.py (with as many text channels as asked) is built by
the library's own `ConnectionState` from gateway-style payloads, as READY and GUILD_CREATE
would, and a user's message arrives the way MESSAGE_CREATE does. So a test says something in
a channel and reads what the channel shows on the server, and a benchmark counts what Discord
would have counted.

`open_rest_bot` (tests/conftest.py) starts one for the test's `library` on the `discord_rest`
server; `start_rest_bot` is the same for a script.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import discord
import discord.ext.commands
import nextcord
import nextcord.ext.commands

from tests.support.bots import Library
from tests.support.discord_rest import ChannelMessage, DiscordRestServer, new_snowflake
from tests.support.nextcord_fake import guild_payload, member_payload, user_payload
from tests.support.world import (
    BOT_ID,
    CHANNEL_ID,
    CHANNEL_IDS,
    GUILD_ID,
    MANAGE_WEBHOOKS,
    READ_AND_SEND,
    Person,
    channel_allowing_the_bot,
    channel_denying_the_bot,
)
from tests.support.world import (
    MANAGE_GUILD as MANAGE_GUILD,
)
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori_cog import add_tomori
from tomori_cog.chat import TomoriChat

BOT_USER = user_payload(BOT_ID, "Tomori", bot=True)
"""The bot's user, as `GET /users/@me` answers it."""


def rest_server(**limits: Any) -> DiscordRestServer:
    """A server for the bot of tests/support/world.py; `limits` are its constructor's."""
    return DiscordRestServer(bot_user=BOT_USER, application_id=BOT_ID, **limits)


@dataclass
class RestBot:
    """A started bot of `library` with the cog, logged in against `server`."""

    library: Library
    bot: Any
    """The library's `commands.Bot`."""
    server: DiscordRestServer
    channel_ids: tuple[int, ...]
    _stopped: bool = False
    _roles: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """The roles each member holds (`member_holds`); none unless said."""
    server_locale: str = "en-US"
    """The guild's preferred locale (`prefers_locale`), as Discord's default."""

    @property
    def chat(self) -> TomoriChat:
        cog = self.bot.get_cog("Tomori")
        assert cog is not None
        return cog.chat  # type: ignore[no-any-return]

    def mention(self) -> str:
        return f"<@{BOT_ID}>"

    def say(
        self,
        content: str,
        *,
        by: Person = Person.ALICE,
        channel: int = CHANNEL_ID,
        going_by: str | None = None,
    ) -> int:
        """`by` posts `content` in `channel`: the server keeps it in the channel's history and
        the library receives it as the gateway's MESSAGE_CREATE. `going_by` is the name they
        chose, as their global name and their nickname here. Returns the message's ID."""
        payload = user_message(content, by=by, channel=channel)
        payload["author"]["global_name"] = going_by
        self.server.add_message(payload)
        arrive(self.bot, payload, self._roles.get(by.id, ()), nick=going_by)
        return int(payload["id"])

    def payload_of(self, message_id: int, *, channel: int = CHANNEL_ID) -> dict[str, Any]:
        """The message as the server keeps it (what Discord resolves for a message command)."""
        [message] = [m for m in self.server.messages(channel) if m.id == message_id]
        return message.payload

    def delete(self, message_id: int, *, channel: int = CHANNEL_ID) -> None:
        """The message is deleted: gone from the server, and the library receives the
        gateway's MESSAGE_DELETE."""
        self.server.remove_message(channel, message_id)
        event = {"id": str(message_id), "channel_id": str(channel), "guild_id": str(GUILD_ID)}
        self.bot._connection.parsers["MESSAGE_DELETE"](event)

    def joins(self, user_id: int, name: str) -> None:
        """A bot user (a proxy bot, say) joins the guild: GUILD_MEMBER_ADD."""
        self._member_added(member_payload(user_id, name, bot=True))

    def member_joins(
        self, user_id: int, username: str, *, global_name: str | None, nick: str | None
    ) -> None:
        """A person joins the guild (GUILD_MEMBER_ADD), going by `global_name` across Discord
        and by `nick` in this guild."""
        member = member_payload(user_id, username)
        member["user"]["global_name"], member["nick"] = global_name, nick
        self._member_added(member)

    def _member_added(self, member: dict[str, Any]) -> None:
        self.bot._connection.parsers["GUILD_MEMBER_ADD"]({**member, "guild_id": str(GUILD_ID)})

    def repost(
        self, content: str, *, name: str, application_id: int, channel: int = CHANNEL_ID
    ) -> int:
        """A proxy bot (the application `application_id`) posts `content` through its webhook
        in `channel`, under `name`, as it reposts a member's message. Returns its ID."""
        webhook_id = new_snowflake()
        payload = {
            **user_message(content, channel=channel),
            "author": {
                "id": str(webhook_id),
                "username": name,
                "discriminator": "0000",
                "avatar": None,
                "bot": True,
            },
            "webhook_id": str(webhook_id),
            "application_id": str(application_id),
        }
        self.server.add_message(payload)
        self.bot._connection.parsers["MESSAGE_CREATE"](copy.deepcopy(payload))
        return int(payload["id"])

    async def kill(
        self,
        *,
        by: Person = Person.ALICE,
        permissions: int = 0,
        channel: int = CHANNEL_ID,
        locale: str = "en-US",
    ) -> dict[str, Any]:
        """`by` (their Discord set to `locale`) runs /kill: the library receives the gateway's
        INTERACTION_CREATE and the cog answers over HTTP. Returns the interaction callback's
        body (`type`, `data`)."""
        data = {"id": str(new_snowflake()), "name": "kill", "type": 1}
        return await self.command(
            data, by=by, permissions=permissions, channel=channel, locale=locale
        )

    async def persona(
        self, subcommand: str, *, channel: int = CHANNEL_ID, **options: str
    ) -> dict[str, Any]:
        """An admin (Manage Server) runs `/tomori persona <subcommand>` with `options`."""
        return await self.grouped("persona", subcommand, channel=channel, **options)

    async def sprite(
        self, subcommand: str, *, channel: int = CHANNEL_ID, **options: str
    ) -> dict[str, Any]:
        """An admin (Manage Server) runs `/tomori sprite <subcommand>` with `options`."""
        return await self.grouped("sprite", subcommand, channel=channel, **options)

    async def grouped(
        self, group: str, subcommand: str, *, channel: int = CHANNEL_ID, **options: str
    ) -> dict[str, Any]:
        """An admin runs `/tomori <group> <subcommand>` with `options` (all text)."""
        given = [{"name": n, "type": 3, "value": v} for n, v in options.items()]
        data = {
            "id": str(new_snowflake()),
            "name": "tomori",
            "type": 1,
            "options": [
                {
                    "name": group,
                    "type": 2,
                    "options": [{"name": subcommand, "type": 1, "options": given}],
                }
            ],
        }
        return await self.command(data, permissions=MANAGE_GUILD, channel=channel)

    async def tomori(self, subcommand: str, *, channel: int = CHANNEL_ID) -> dict[str, Any]:
        """An admin runs `/tomori <subcommand>`, without options."""
        data = {
            "id": str(new_snowflake()),
            "name": "tomori",
            "type": 1,
            "options": [{"name": subcommand, "type": 1, "options": []}],
        }
        return await self.command(data, permissions=MANAGE_GUILD, channel=channel)

    def allow_webhooks(self, channel: int = CHANNEL_ID) -> None:
        """An admin gives the bot Manage Webhooks in the channel (CHANNEL_UPDATE)."""
        self.bot._connection.parse_channel_update(
            channel_allowing_the_bot(MANAGE_WEBHOOKS, channel)
        )

    def deny(self, permission: int, channel: int = CHANNEL_ID) -> None:
        """An admin denies the bot `permission` in the channel (CHANNEL_UPDATE)."""
        self.bot._connection.parse_channel_update(channel_denying_the_bot(permission, channel))

    async def command(
        self,
        data: dict[str, Any],
        *,
        by: Person = Person.ALICE,
        permissions: int = 0,
        channel: int = CHANNEL_ID,
        locale: str = "en-US",
    ) -> dict[str, Any]:
        """`by` (their Discord set to `locale`) runs the application command `data`: the
        library receives the gateway's INTERACTION_CREATE and the cog answers over HTTP
        (deferred answers included). Returns the interaction callback's body (`type`,
        `data`)."""
        return await self._interaction(2, data, by, permissions, channel, locale=locale)

    async def press(
        self,
        message: ChannelMessage,
        custom_id: str,
        *,
        by: Person = Person.ALICE,
        roles: Sequence[int] = (),
        permissions: int = 0,
        locale: str = "en-US",
    ) -> dict[str, Any]:
        """`by` (holding `roles`, and `permissions` in the channel; their Discord set to
        `locale`) presses the button `custom_id` of `message`: a component interaction.
        Returns the interaction callback's body (`type`, `data`)."""
        channel = int(message.payload["channel_id"])
        data = {"custom_id": custom_id, "component_type": 2}
        extra = {"message": message.payload}
        return await self._interaction(
            3, data, by, permissions, channel, roles=roles, extra=extra, locale=locale
        )

    # -- message commands (a message's context menu: Apps → its name) ---------------------------

    async def on_message(
        self,
        name: str,
        message: dict[str, Any],
        *,
        by: Person = Person.ALICE,
        permissions: int = 0,
        locale: str = "en-US",
    ) -> dict[str, Any]:
        """`by` (their Discord set to `locale`) runs the message command `name` on `message`
        (its payload, as the server keeps it): an application command interaction whose data
        is of type 3 (MESSAGE), naming the message as `target_id` and carrying it whole in
        `resolved.messages`, as Discord sends it. Returns the interaction callback's body
        (`type`, `data`)."""
        data = {
            "id": str(new_snowflake()),
            "name": name,
            "type": 3,
            "target_id": message["id"],
            "resolved": {"messages": {message["id"]: copy.deepcopy(message)}},
        }
        channel = int(message["channel_id"])
        return await self.command(
            data, by=by, permissions=permissions, channel=channel, locale=locale
        )

    def add_role(self, role_id: int, name: str) -> None:
        """The guild gains role `role_id` (GUILD_ROLE_CREATE)."""
        role = {
            "id": str(role_id),
            "name": name,
            "permissions": "0",
            "position": 1,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
        }
        self.bot._connection.parsers["GUILD_ROLE_CREATE"]({"guild_id": str(GUILD_ID), "role": role})

    def member_holds(self, person: Person, roles: Sequence[int]) -> None:
        """`person` is a member holding `roles` (GUILD_MEMBER_ADD: the library caches them),
        as their messages' member objects say from now on."""
        self._roles[person.id] = tuple(roles)
        member = {**member_payload(person.id, person.username), "roles": [str(r) for r in roles]}
        self.server.members[(GUILD_ID, person.id)] = member
        self.bot._connection.parsers["GUILD_MEMBER_ADD"]({**member, "guild_id": str(GUILD_ID)})

    async def _interaction(
        self,
        kind: int,
        data: dict[str, Any],
        by: Person,
        permissions: int,
        channel: int,
        *,
        roles: Sequence[int] = (),
        extra: dict[str, Any] | None = None,
        locale: str = "en-US",
    ) -> dict[str, Any]:
        member = member_payload(by.id, by.username, bot=by.is_bot)
        member["roles"] = [str(role) for role in roles]
        if kind == 3:  # a press: what Discord knows of the presser's roles as it is sent
            self.server.members[(GUILD_ID, by.id)] = member
        interaction_id = new_snowflake()
        if extra is not None and "message" in extra:
            self.server.press_of(interaction_id, channel, int(extra["message"]["id"]))
        payload = {
            **(extra or {}),
            "id": str(interaction_id),
            "application_id": str(BOT_ID),
            "type": kind,
            "token": f"interaction-token-{new_snowflake()}",
            "version": 1,
            "channel_id": str(channel),
            "channel": {"id": str(channel), "type": 0, "guild_id": str(GUILD_ID)},
            "guild_id": str(GUILD_ID),
            "locale": locale,
            "guild_locale": self.server_locale,
            "app_permissions": str(READ_AND_SEND),
            "member": {**member, "permissions": str(permissions | READ_AND_SEND)},
            "data": data,
            "entitlements": [],
            "authorizing_integration_owners": {},
            "attachment_size_limit": 10_000_000,
        }
        callbacks = self.server.interaction_callbacks
        before = len(callbacks)
        self.bot._connection.parse_interaction_create(payload)
        async with asyncio.timeout(5):
            while len(callbacks) == before:  # noqa: ASYNC110
                await asyncio.sleep(0.005)
        return callbacks[-1]

    # -- locales (issue 36, words): the server's preferred locale, the commands registered --

    def prefers_locale(self, locale: str) -> None:
        """The server's admins set its preferred locale (Server Settings, Community):
        GUILD_UPDATE carries the guild with it."""
        self.server_locale = locale
        guild = {**guild_payload(self.channel_ids), "preferred_locale": locale}
        self.bot._connection.parsers["GUILD_UPDATE"](guild)

    async def sync_commands(self) -> list[dict[str, Any]]:
        """The library registers its application commands with Discord, as a bot does on
        connecting (nextcord) or when told (discord.py's `tree.sync`); returns what Discord
        then holds, globally."""
        if self.library == "nextcord":
            await self.bot.sync_application_commands()
        else:
            await self.bot.tree.sync()
        return self.server.commands()

    async def settled(self, *channels: int) -> None:
        """Wait until the library's event tasks ran and the channels' turns (all unless
        given) ended."""
        await self.admitted()
        for channel in channels or self.channel_ids:
            await self.chat.wait_idle(channel)

    async def tidied(self) -> None:
        """`settled`, and the answers' buttons as they end: Stop buttons taken away, take
        buttons put on or off (tidy-ups, which wait for room to spare)."""
        await self.settled()
        await self.chat.takes.settled()
        await self.chat.stop_buttons.settled()

    async def admitted(self) -> None:
        """Wait for the library's event handlers: every message so far reached the listener."""
        await events_handled(self.bot, self.library)

    def shown(self, channel: int = CHANNEL_ID) -> list[ChannelMessage]:
        """The bot's messages in `channel` as the server shows them, oldest first."""
        return self.server.messages_by(BOT_ID, channel)

    def contents(self, channel: int = CHANNEL_ID) -> list[str]:
        return [m.content for m in self.shown(channel) if m.content]

    async def stop(self) -> None:
        """Remove the cog and close the HTTP session; stopping twice does nothing."""
        if self._stopped:
            return
        self._stopped = True
        if self.library == "nextcord":
            cog = self.bot.get_cog("Tomori")
            self.bot.remove_cog("Tomori")
            closing = getattr(cog, "closing", None)
            if closing is not None:
                await closing
        else:
            await self.bot.remove_cog("Tomori")
        await self.bot.http.close()


def user_message(
    content: str, *, by: Person = Person.ALICE, channel: int = CHANNEL_ID
) -> dict[str, Any]:
    """The message object of what `by` posts in `channel` (a mention of the bot included)."""
    return {
        "id": str(new_snowflake()),
        "channel_id": str(channel),
        "guild_id": str(GUILD_ID),
        "author": user_payload(by.id, by.username, bot=by.is_bot),
        "content": content,
        "timestamp": discord.utils.utcnow().isoformat(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [BOT_USER] if f"<@{BOT_ID}>" in content else [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
        "components": [],
    }


def arrive(
    bot: Any, message: dict[str, Any], roles: Sequence[int] = (), *, nick: str | None = None
) -> None:
    """`message` (a `user_message`) reaches the bot as the gateway's MESSAGE_CREATE, with the
    author's member object (holding `roles`, going by `nick` in the guild) as a guild message
    carries it, through the parser the gateway calls."""
    author = message["author"]
    member = member_payload(int(author["id"]), author["username"], bot=author["bot"])
    member["roles"] = [str(role) for role in roles]
    member["nick"] = nick
    event = {**copy.deepcopy(message), "member": {k: v for k, v in member.items() if k != "user"}}
    bot._connection.parsers["MESSAGE_CREATE"](event)


async def events_handled(bot: Any, library: Library) -> None:
    """Wait until the library's event tasks so far (the cog's listener among them) ended: the
    libraries run each handler as a task named after themselves."""
    await asyncio.sleep(0)
    current = asyncio.current_task()
    prefix = "nextcord:" if library == "nextcord" else "discord.py:"
    events = [
        task
        for task in asyncio.all_tasks()
        if task is not current and task.get_name().startswith(prefix)
    ]
    await asyncio.gather(*events, return_exceptions=True)


def declare_world(server: DiscordRestServer, channel_ids: Sequence[int] = CHANNEL_IDS) -> None:
    """The guild's text channels, on the server."""
    for channel in channel_ids:
        if not server.has_channel(channel):
            server.add_channel(channel, guild_id=GUILD_ID)


def _intents(library: Library, *, members: bool = True) -> Any:
    """Message content, and the members intent unless told (a bot without it, bot.py's
    default, has the library cache few members)."""
    module: Any = nextcord if library == "nextcord" else discord
    intents = module.Intents.default()
    intents.message_content = True
    intents.members = members
    return intents


async def logged_in(
    library: Library,
    token: str,
    channel_ids: Sequence[int] = CHANNEL_IDS,
    *,
    members_intent: bool = True,
) -> Any:
    """A `commands.Bot` of `library` logged in with `token` (against the server the libraries'
    `Route.BASE` names: see `pointed_at`), in the guild of tests/support/world.py with
    `channel_ids` as its text channels (`declare_world` declares them on the server); no cog."""
    bot: Any
    intents = _intents(library, members=members_intent)
    if library == "nextcord":
        bot = nextcord.ext.commands.Bot(intents=intents)
    else:
        bot = discord.ext.commands.Bot(command_prefix="//unused ", intents=intents)
    await log_in(bot, library, token, channel_ids)
    return bot


async def log_in(bot: Any, library: Library, token: str, channel_ids: Sequence[int]) -> None:
    """Log `bot` (a client of `library`, built by the caller) in with `token`, as `logged_in`
    does: for a bot someone else builds, llmcord's in the bench."""
    if library == "nextcord":
        data = await bot.http.static_login(f"Bot {token}")
        user_type: Any = nextcord.ClientUser
    else:
        await bot._async_setup_hook()  # what `login` does first: the loop, the tree
        data = await bot.http.static_login(token)
        user_type = discord.ClientUser
    state = bot._connection
    state.user = user_type(state=state, data=data)
    state.application_id = BOT_ID  # READY would tell it
    state._add_guild_from_data(guild_payload(tuple(channel_ids)))


async def start_rest_bot(
    library: Library,
    server: DiscordRestServer,
    settings: Settings,
    chain: ModelChain,
    channel_ids: Sequence[int] = CHANNEL_IDS,
    *,
    members_intent: bool = True,
) -> RestBot:
    """A bot of `library` logged in against `server` (see `logged_in`), with the cog."""
    declare_world(server, channel_ids)
    bot = await logged_in(library, server.token, channel_ids, members_intent=members_intent)
    added = add_tomori(bot, settings=settings, chain=chain)
    if added is not None:
        await added  # discord.py's add_cog is a coroutine
    rest_bot = RestBot(library, bot, server, tuple(channel_ids))
    await rest_bot.chat.ensure_started()
    return rest_bot


OpenRestBot = Callable[[Settings, ModelChain], Awaitable[RestBot]]
"""The `open_rest_bot` fixture: start a bot of the test's library on the `discord_rest`
server, stopped when the test ends."""


def said(reply: dict[str, Any]) -> str:
    """The description of an ephemeral answer's embed."""
    assert reply["data"]["flags"] & 64
    return str(reply["data"]["embeds"][0].get("description", ""))


def conversation(request: Any) -> list[tuple[str, str]]:
    """(role, content) of each message an OpenAI-compatible request sent."""
    return [(m["role"], m["content"]) for m in request.body["messages"]]


def posted(server: DiscordRestServer, channel: int = CHANNEL_ID) -> list[ChannelMessage]:
    """The channel's messages written by webhooks or the bot, oldest first."""
    return [m for m in server.messages(channel) if m.webhook_id or m.payload["author"]["bot"]]
