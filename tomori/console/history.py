"""The console channel's messages, and what of them a model is shown: as the cog shows a
Discord channel's (the recent messages, the answers since a queued trigger, then the trigger;
a persona's own messages the assistant's, every other speaker named)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

from tomori.delivery.sprite_markers import wore_sprite
from tomori.prompt.conversation import in_time_order, spoken
from tomori.providers.base import ContextItem, Role

USER_NAME = "user"
"""The name the model is shown for the person at the terminal."""

MAX_ITEM_CHARS = 8_000
"""A history message longer than this is cut, as the cog cuts one from Discord."""


@dataclass(eq=False)
class ConsoleMessage:
    id: int
    text: str
    from_bot: bool
    reply_to: int | None = None
    speaker: str | None = None
    """The persona that posted it, as shown (`Name (label)` wearing a sprite; None: the bot,
    or the person typing)."""
    command: bool = False
    """A command typed that a turn runs (`/scene`): it has its number and its place, but no
    model is shown it, as Discord shows no message for a slash command."""


def in_view(
    messages: Iterable[ConsoleMessage],
    trigger: ConsoleMessage | None,
    waiting: Collection[str],
    history_limit: int,
    until: int,
) -> list[ConsoleMessage]:
    """The messages a turn is shown, in order: the last `history_limit` before the trigger,
    the bot's answers since it (of the first `history_limit` after it, as the cog reads them),
    then the trigger. `waiting` holds the numbers of messages still queued, which are left out.
    `until`: the channel as it stood when the turn read it, before this message number. With
    no trigger (a turn no message asks for, a scene), the last messages before `until`."""
    before = until if trigger is None else trigger.id
    listed = list(messages)
    recent = [m for m in listed if m.id < before]
    recent = recent[-history_limit:] if history_limit else []
    after = [m for m in listed if trigger is not None and trigger.id < m.id < until]
    since = [m for m in after[:history_limit] if m.from_bot]
    return in_time_order(recent, since, trigger, waiting)


def context(
    shown: Iterable[ConsoleMessage],
    system_prompt: str,
    voice: str | None,
    trigger: ConsoleMessage | None = None,
) -> tuple[ContextItem, ...]:
    """The system prompt, then `shown` as the model reads them. `voice` is the persona that
    answers (None: the bot): its own messages are the assistant's, any other speaker's are
    named. A command typed (`/scene`) is left out, as Discord shows no message for it. The
    `trigger` is sent whole whatever the model's context budget (`ContextItem.pinned`)."""
    items = [ContextItem(Role.SYSTEM, system_prompt)]
    for message in shown:
        text = message.text.strip()[:MAX_ITEM_CHARS]  # as Discord keeps a message's text
        if message.command:
            continue
        if message.from_bot and message.speaker == voice:
            item = ContextItem(Role.ASSISTANT, text)
        elif message.from_bot and voice and wore_sprite(voice, message.speaker or ""):
            item = ContextItem(Role.ASSISTANT, spoken(message.speaker or "", text))
        elif message.from_bot:
            item = ContextItem(Role.USER, spoken(message.speaker or "tomori", text))
        else:
            item = ContextItem(Role.USER, spoken(USER_NAME, text))
        items.append(replace(item, pinned=True) if message is trigger else item)
    return tuple(items)
