"""Which Discord library the bot runs on, and the few calls that differ between the two.

nextcord 3 and discord.py 2 share almost all of the surface the cog uses (messages, channels,
embeds, allowed mentions, interactions, the exception classes); where they differ, this is the
one place that knows. Only the library the bot is built on is ever imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import aiohttp

from tomori.config.parsers import installed
from tomori.errors import TomoriError

LIBRARIES = ("nextcord", "discord")
"""The Discord libraries a bot of the `tomori` command can run on, by their module, in the
order it prefers them: nextcord first, as the repository's bot always ran on it."""


def installed_library() -> str | None:
    """The module of the Discord library the `tomori` command runs a bot on, without importing
    it (None: neither is installed)."""
    return next((name for name in LIBRARIES if installed(name)), None)


class UnsupportedBot(TomoriError, TypeError):
    """The bot is neither a nextcord nor a discord.py bot."""


@dataclass(frozen=True)
class Library:
    name: str
    module: ModuleType

    @property
    def is_nextcord(self) -> bool:
        return self.name == "nextcord"

    async def trigger_typing(self, channel: Any) -> None:
        if self.is_nextcord:
            await channel.trigger_typing()
        else:
            await channel.typing()  # awaiting discord.py's Typing triggers it once

    async def send(
        self,
        channel: Any,
        content: str,
        *,
        reference: Any,
        allowed_mentions: Any,
        nonce: str,
        view: Any = None,
    ) -> Any:
        """Post `content` in `channel` as the bot, with `nonce` enforced: Discord answers a
        create with a nonce the bot used in the past few minutes with the message it made
        then, and makes none (`enforce_nonce`), so a create asked again after Discord failed
        to answer is shown once. nextcord, and discord.py before 2.5, send a nonce without
        enforcing it, so the request is made here, with the library's own payload. `view`:
        the buttons it carries (`buttons`), if any."""
        state = channel._state
        reference_dict = None if reference is None else reference.to_message_reference_dict()
        if not self.is_nextcord:
            missing = self.module.utils.MISSING
            from discord.http import handle_message_parameters  # (the bot's library only)

            with handle_message_parameters(
                content=content,
                nonce=nonce,
                allowed_mentions=allowed_mentions,
                previous_allowed_mentions=state.allowed_mentions,
                message_reference=missing if reference_dict is None else reference_dict,
                view=missing if view is None else view,
            ) as params:
                assert params.payload is not None
                params.payload["enforce_nonce"] = True
                data = await state.http.send_message(channel.id, params=params)
            return state.create_message(channel=channel, data=data)
        from nextcord.http import Route

        http = state.http
        payload = http.get_message_payload(
            content,
            nonce=nonce,
            allowed_mentions=allowed_mentions.to_dict(),
            message_reference=reference_dict,
            components=None if view is None else view.to_components(),
        )
        payload["enforce_nonce"] = True
        route = Route("POST", "/channels/{channel_id}/messages", channel_id=channel.id)
        return state.create_message(channel=channel, data=await http.request(route, json=payload))

    def is_forward(self, reference: Any) -> bool:
        """Whether a message reference is a forward (a copy of another message), not a reply.

        discord.py before 2.5 knows no forwards: it sees every reference as a reply.
        """
        kinds = getattr(self.module, "MessageReferenceType", None)
        return kinds is not None and getattr(reference, "type", None) == kinds.forward

    def bot_token(self, bot: Any) -> str | None:
        """The token the bot logged in with (None before it did): the key material of the
        secrets the database keeps sealed. nextcord keeps it as its default authorization
        header (`Bot <token>`), discord.py as the token itself."""
        if self.is_nextcord:
            auth = getattr(bot.http, "_default_auth", None)
            return auth if isinstance(auth, str) and auth else None
        token = getattr(bot.http, "token", None)
        return token if isinstance(token, str) and token else None

    def webhook(self, bot: Any, webhook_id: int, token: str) -> Any:
        """The library's webhook object for a webhook known by its ID and token, sending over
        the bot's own HTTP session (so over the same REST layer as the bot's requests), and
        bound to the bot's state: only then does either library send buttons through it (the
        bot created it, so Discord takes them)."""
        webhooks = self.module.Webhook
        if self.is_nextcord:
            data = {"id": webhook_id, "type": 1, "token": token}
            session = bot.http._HTTPClient__session
            return webhooks(data, session=session, state=bot._connection)
        return webhooks.partial(webhook_id, token, client=bot)

    def buttons(self, *buttons: tuple[str, str, str]) -> Any:
        """A row of buttons, each (label, custom id, style name), to send with a message; the
        library keeps no record of it, so every press reaches the cog's `on_interaction` alone
        (nextcord would otherwise answer it itself, and both would keep it in memory)."""
        ui = self.module.ui
        if self.is_nextcord:
            view = ui.View(timeout=None, auto_defer=False, prevent_update=False)
        else:
            view = ui.View(timeout=None)
        for label, custom_id, style in buttons:
            kind = getattr(self.module.ButtonStyle, style)
            view.add_item(ui.Button(label=label, custom_id=custom_id, style=kind))
        if not self.is_nextcord:
            view.stop()  # discord.py stores a view sent unfinished
        return view

    def buttons_but(self, message: Any, prefix: str) -> Any | None:
        """The buttons `message` shows (as Discord sent it) but those whose custom id begins
        with `prefix`, as a row to edit it with: an edit carries its components whole, so
        taking one button away keeps the others only if they go with it. None: no other."""
        kept = [
            button
            for row in getattr(message, "components", ())
            for button in getattr(row, "children", ())
            if getattr(button, "custom_id", None) and not button.custom_id.startswith(prefix)
        ]
        if not kept:
            return None
        view = self.buttons(*((b.label or "", b.custom_id, b.style.name) for b in kept))
        for item, shown in zip(view.children, kept, strict=True):
            item.disabled = bool(shown.disabled)
        return view

    async def presser_roles(
        self, interaction: Any, read: Callable[[], Awaitable[None]]
    ) -> frozenset[str]:
        """The roles the member who sent `interaction` holds as Discord knows them now.
        discord.py builds its member from the interaction itself; nextcord hands the member it
        has cached instead, whose roles may be stale (a bot without the members intent hears
        of no role change), so Discord is asked (`read`: wait for the request budget first).
        None known (a direct message, or Discord did not answer): no role."""
        user, guild = interaction.user, interaction.guild
        if not self.is_nextcord:
            return frozenset(str(role.id) for role in getattr(user, "roles", ()))
        if guild is None:
            return frozenset()
        try:
            await read()
            member = await guild.fetch_member(user.id)
        except (self.module.HTTPException, aiohttp.ClientError, OSError):
            return frozenset()
        return frozenset(str(role.id) for role in member.roles)

    async def defer(self, interaction: Any) -> None:
        if self.is_nextcord:
            await interaction.response.defer(ephemeral=True, with_message=True)
        else:
            await interaction.response.defer(ephemeral=True, thinking=True)


def detect(bot: object) -> Library:
    """The library `bot`'s class comes from, judged by the modules of its bases."""
    roots = {cls.__module__.split(".", 1)[0] for cls in type(bot).__mro__}
    for name in ("nextcord", "discord"):
        if name in roots:
            return Library(name, importlib.import_module(name))
    raise UnsupportedBot(
        f"tomori-cog needs a nextcord or discord.py bot, not {type(bot).__qualname__}"
    )
