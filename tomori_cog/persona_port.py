"""A persona's `ChannelPort`: through the channel's webhook, else through the bot's identity.

`PersonaPort` is a `ChannelPort` like any other: the writer cuts, paces and finishes a
persona's answer exactly as the bot's, never knowing who speaks. Where no webhook can post (a
direct message, no Manage Webhooks permission, Discord refusing the webhook, a send through it
failing) the persona speaks through the bot's own identity with its name before the text
(`named`), and the log says why, once per channel. A webhook someone deleted is created anew
at the next send; a message it posted can no longer be edited (edit mode goes on in a new one).

A persona with sprites wears one when its writer says so (`PersonaPort.wear`): the messages
sent from then on carry the sprite's avatar and the name `Name (label)` (`sprite_name`), and
back to its own avatar under its own name; without a webhook they show `**Name (label):**`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from tomori.cast.personas import Persona, named
from tomori.cast.sprites import wardrobe
from tomori.delivery.port import ChannelPort, DeliveryFailed, Urgency
from tomori.delivery.sprite_markers import Wardrobe, sprite_name
from tomori_cog.discord_io import WebhookGone, WriteMemory
from tomori_cog.library import Library
from tomori_cog.pacing import DiscordPacing
from tomori_cog.stop_buttons import AnswerButton
from tomori_cog.webhooks import WebhookPort, Webhooks


def wardrobe_of(persona: Persona, port: PersonaPort) -> Wardrobe | None:
    """The persona's sprites as its writer switches them on `port` (None: it has none)."""
    return wardrobe(persona.name, persona.sprites, port.wear)


class PersonaPort:
    """A persona's `ChannelPort`: through the channel's webhook, else as the bot, named.

    Messages sent are edited the way they went.
    """

    def __init__(
        self,
        library: Library,
        channel: Any,
        pacing: DiscordPacing,
        webhooks: Webhooks,
        persona: Persona,
        bot_port: ChannelPort,
        memory: WriteMemory,
        involved: Collection[int] = (),
        button: AnswerButton | None = None,
    ) -> None:
        """`button`: the answer's Stop button, on its first message whichever way it goes
        (`bot_port` carries the same)."""
        self._library = library
        self._channel = channel
        self._pacing = pacing
        self._webhooks = webhooks
        self._persona = persona
        self._bot_port = bot_port
        self._memory = memory
        self._involved = involved
        self._button = button
        self._webhook: WebhookPort | None = None
        self._looked = False
        self._as_bot: dict[str, str] = {}
        """Messages sent through the bot's identity, and the name each shows."""
        self._sprite: str | None = None
        """The label of the sprite worn (None: the persona's own avatar)."""

    def wear(self, label: str | None) -> None:
        """The messages sent from now on wear sprite `label` (None: the persona's own avatar);
        a label the persona no longer has is its own avatar under the sprite's name."""
        self._sprite = label
        if self._webhook is not None:
            self._dress(self._webhook)

    def _dress(self, port: WebhookPort) -> None:
        avatars = {sprite.label: sprite.avatar_url for sprite in self._persona.sprites}
        port.username = sprite_name(self._persona.name, self._sprite)
        port.avatar_url = avatars.get(self._sprite or "", self._persona.avatar_url)

    async def _port(self) -> ChannelPort:
        if not self._looked:
            self._looked = True
            webhook = await self._webhooks.of(self._channel)
            if webhook is not None:
                self._webhook = WebhookPort(
                    self._library,
                    self._channel,
                    self._pacing,
                    self._memory,
                    webhook,
                    self._persona,
                    self._involved,
                    self._button,
                )
                self._dress(self._webhook)
        return self._webhook if self._webhook is not None else self._bot_port

    async def writable(self, urgency: Urgency) -> None:
        await (await self._port()).writable(urgency)

    async def send(self, content: str, *, reply_to: str | None, urgency: Urgency) -> str:
        port = await self._port()
        for attempt in range(2):
            if port is self._bot_port:
                break
            try:
                return await port.send(content, reply_to=reply_to, urgency=urgency)
            except WebhookGone:
                assert self._webhook is not None
                await self._webhooks.gone(self._channel, self._webhook.webhook)
                self._looked, self._webhook = False, None
                port = await self._port() if attempt == 0 else self._bot_port
            except DeliveryFailed as error:  # refused, or failed: the bot's identity speaks
                self._webhooks.falls_back(self._channel, f"a webhook send failed ({error})")
                break
        shown = sprite_name(self._persona.name, self._sprite)
        message_id = await self._bot_port.send(
            named(shown, content), reply_to=reply_to, urgency=urgency
        )
        self._as_bot[message_id] = shown
        return message_id

    async def edit(self, message_id: str, content: str, *, urgency: Urgency) -> None:
        shown = self._as_bot.get(message_id)
        if shown is not None:
            await self._bot_port.edit(message_id, named(shown, content), urgency=urgency)
            return
        await self._port()  # a message it did not post (a swipe writes a take back): its webhook
        if self._webhook is None:
            raise DeliveryFailed("the webhook that sent this message is gone")
        try:
            await self._webhook.edit(message_id, content, urgency=urgency)
        except WebhookGone:
            # its messages stay, but none of them can change: the writer goes on in a new one,
            # which a new webhook posts
            await self._webhooks.gone(self._channel, self._webhook.webhook)
            self._looked, self._webhook = False, None
            raise
