"""What the model sees of a Discord message: the one place a message becomes a `ContextItem`.

Messages are the library's own objects; the attributes read here are the same in nextcord and
discord.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tomori.cast.personas import unnamed
from tomori.delivery.sprite_markers import wore_sprite
from tomori.prompt.conversation import spoken
from tomori.providers.base import ContextItem, Role
from tomori.turns.surface import BOT_VOICE, Voice
from tomori_cog.reading.attachments import TurnAttachments

Context = tuple[ContextItem, ...]

MAX_ITEM_CHARS = 8_000
"""A history message longer than this is cut: one huge paste must not crowd out the rest."""


def embed_text(embeds: Iterable[Any]) -> str:
    """The title and description of each embed, as the model is shown them."""
    shown = []
    for embed in embeds:
        lines = [
            text.strip()
            for text in (getattr(embed, "title", None), getattr(embed, "description", None))
            if isinstance(text, str) and text.strip()
        ]
        if lines:
            shown.append("[embed] " + "\n".join(lines))
    return "\n".join(shown)


@dataclass(frozen=True)
class Shown:
    """What a turn shows the model of its channel, in order, before it becomes context."""

    messages: list[Any]
    attached: TurnAttachments

    @property
    def notices(self) -> Context:
        """The request-only notices on what of the attachments the model is not shown."""
        return self.attached.notices


class ModelView:
    """Messages as the model is shown them, by the bot (`bot.user` is its own)."""

    def __init__(self, bot: Any) -> None:
        self._bot = bot

    def context(self, shown: Shown, system_prompt: str, voice: Voice) -> Context:
        """The system prompt, then each message shown as `voice` sees it."""
        items = [ContextItem(Role.SYSTEM, system_prompt)]
        for message in shown.messages:
            item = self.item(message, shown.attached, voice)
            if item is not None:
                items.append(item)
        return tuple(items)

    def item(
        self, message: Any, attached: TurnAttachments, voice: Voice = BOT_VOICE
    ) -> ContextItem | None:
        """The one place a message becomes what the model sees of it; None if nothing.

        Which messages are shown at all is the reader's (`HistoryReader`). The cog's own
        messages are the assistant's turns, by their text alone: the embeds it posts are its
        notices, which are for the people in the channel, not the model. Anyone else's embeds
        (another bot's, a link preview) add their title and description. A persona's messages
        are the assistant's to that persona, and named to any other voice, as the bot's are
        once a persona answers (see `Voice`); one that wore a sprite starts with its marker,
        `Name (label): `, as the model wrote it.
        """
        me = self._bot.user
        poster = voice.posters.get(str(message.id))
        if poster is not None:
            name = voice.names.get(poster, message.author.display_name)
            text = unnamed(name, message.content or "")[:MAX_ITEM_CHARS]
            if not text.strip():
                return None
            shown = message.author.display_name  # `Name (label)` when it wore a sprite
            speaker = shown if wore_sprite(name, shown) else name
            if poster == voice.persona:
                return ContextItem(
                    Role.ASSISTANT, text if speaker == name else spoken(speaker, text)
                )
            return ContextItem(Role.USER, spoken(speaker, text))
        if me is not None and message.author.id == me.id:
            text = (message.content or "")[:MAX_ITEM_CHARS]
            if not text.strip():
                return None
            if voice.persona is None:
                return ContextItem(Role.ASSISTANT, text)
            return ContextItem(Role.USER, spoken(message.author.display_name, text))
        files = attached.of(message)
        parts = (message.clean_content or "", embed_text(message.embeds))
        shown = "\n".join(part for part in parts if part.strip())[:MAX_ITEM_CHARS]
        if not shown.strip() and not files:
            return None
        return files.item(message.author.display_name, shown)
