"""What the model sees of a Discord message: the one place a message becomes a `ContextItem`.

Messages are the library's own objects; the attributes read here are the same in nextcord and
discord.py. Each message's author is a `Speaker` (a member's username, a persona, a webhook's
post), so that speakers whose names look alike are told apart (`tomori.cast.speakers`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from tomori.cast.personas import unnamed
from tomori.cast.speakers import Said, Speaker, named
from tomori.delivery.sprite_markers import wore_sprite
from tomori.prompt.conversation import spoken
from tomori.providers.base import ContextItem, Role
from tomori.turns.surface import Voice
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
    kept: frozenset[int] = frozenset()
    """The IDs of the messages the request budget always sends whole (`ContextItem.pinned`):
    the trigger, the chain it replies to, a thread's starter."""

    @property
    def notices(self) -> Context:
        """The request-only notices on what of the attachments the model is not shown."""
        return self.attached.notices


class ModelView:
    """Messages as the model is shown them, by the bot (`bot.user` is its own)."""

    def __init__(self, bot: Any) -> None:
        self._bot = bot

    def context(self, shown: Shown, system_prompt: str, voice: Voice) -> Context:
        """The system prompt, then each message shown as `voice` sees it, each speaker under
        a label no other speaker's name can pass for (`named`)."""
        lines = (item for _, item in self.lines(shown, voice))
        return (ContextItem(Role.SYSTEM, system_prompt), *lines)

    def lines(self, shown: Shown, voice: Voice) -> list[tuple[str, ContextItem]]:
        """Each message shown as `voice` sees it (as `context` gives them), by its ID."""
        said = [(m.id, self.said(m, shown.attached, voice)) for m in shown.messages]
        kept = [(message_id, line) for message_id, line in said if line is not None]
        items = named([line for _, line in kept], self._answering(voice))
        return [
            (str(message_id), replace(item, pinned=True) if message_id in shown.kept else item)
            for (message_id, _), item in zip(kept, items, strict=True)
        ]

    def said(self, message: Any, attached: TurnAttachments, voice: Voice) -> Said | None:
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
                return Said(Role.ASSISTANT, text if speaker == name else spoken(speaker, text))
            return Said(Role.USER, text, _persona(poster, speaker))
        if me is not None and message.author.id == me.id:
            text = (message.content or "")[:MAX_ITEM_CHARS]
            if not text.strip():
                return None
            if voice.persona is None:
                return Said(Role.ASSISTANT, text)
            return Said(Role.USER, text, _user(message.author))
        files = attached.of(message)
        parts = (message.clean_content or "", embed_text(message.embeds))
        shown = "\n".join(part for part in parts if part.strip())[:MAX_ITEM_CHARS]
        if not shown.strip() and not files:
            return None
        author = _webhook(message.author) if message.webhook_id else _user(message.author)
        return Said(Role.USER, files.body(shown), author, files.images, files.at(shown))

    def _answering(self, voice: Voice) -> tuple[Speaker, ...]:
        """Who the model answers as: no speaker may pass for it either."""
        if voice.persona is not None:
            return (_persona(voice.persona, voice.names.get(voice.persona, voice.persona)),)
        me = self._bot.user
        return () if me is None else (_user(me),)


def _user(user: Any) -> Speaker:
    """A Discord account as a speaker: its name shown, and its username, unique on Discord
    (with its #discriminator where it still has one, as bots do)."""
    discriminator = str(getattr(user, "discriminator", "0") or "0")
    username = user.name if discriminator.strip("0") == "" else f"{user.name}#{discriminator}"
    return Speaker(str(user.id), user.display_name, username)


def _webhook(author: Any) -> Speaker:
    """A post through a webhook the cog did not make (a proxy's, say): its name is whatever
    its owner gave it, and no account is behind it to tell it by."""
    return Speaker(f"webhook {author.display_name}", author.display_name)


def _persona(key: str, name: str) -> Speaker:
    return Speaker(f"persona {key}", name, kind="persona")
