"""What the bot tells a channel when something went wrong, as plain data.

The cog renders a `Notice` as an embed; the core never builds one. No notice carries an
exception's text, a key or a URL, so nothing secret can leak through one.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

log = logging.getLogger(__name__)


class NoticeColour(StrEnum):
    WARNING = "warning"
    ERROR = "error"
    SUCCESS = "success"


@dataclass(frozen=True, slots=True)
class Notice:
    title: str
    description: str
    colour: NoticeColour


class NoticeSink(Protocol):
    async def post_notice(self, notice: Notice) -> None:
        """Post a notice in the channel (the cog renders it as an embed)."""
        ...


async def post_notice_safely(sink: NoticeSink, notice: Notice, channel_id: str) -> None:
    """Post a notice; a failure to post is logged, never raised over the outcome it tells."""
    try:
        await sink.post_notice(notice)
    except Exception:
        log.warning(
            "could not post the %r notice in channel %s", notice.title, channel_id, exc_info=True
        )


TIMEOUT_TITLE = "Response Timed Out"

IDLE_TIMEOUT = Notice(
    TIMEOUT_TITLE,
    "The AI provider stopped responding and the connection timed out. This can happen when the "
    "provider is overloaded or experiencing issues. Please try again.",
    NoticeColour.WARNING,
)

FIRST_TOKEN_TIMEOUT = Notice(
    TIMEOUT_TITLE,
    "The AI provider didn't start responding in time. Its queue may be overloaded. "
    "Please try again.",
    NoticeColour.WARNING,
)

GENERATION_ERROR = Notice(
    "Generation Error",
    "An issue while trying to stream the response.",
    NoticeColour.ERROR,
)

RATE_LIMITED = Notice(
    "Rate Limited",
    "The AI provider is limiting how often it can be asked right now. Please try again in a "
    "little while.",
    NoticeColour.WARNING,
)

KEY_REFUSED = Notice(
    "Provider Refused the Key",
    "The AI provider refused this bot's key, so it cannot answer. The bot's owner needs to "
    "check it.",
    NoticeColour.ERROR,
)


def refused_by_provider(reason: str) -> Notice:
    """Told when a provider refused the turn's content (a content filter): its own reason, and
    that no other model was asked, which might have answered what it refused. `reason` is
    `ProviderError.reason`: short, and free of keys and links."""
    return Notice(
        "Refused by the Provider",
        f"The AI provider refused to answer this, so no other model was asked. "
        f"Its reason: {reason}",
        NoticeColour.WARNING,
    )


EMPTY_RESPONSE = Notice(
    "Empty Response",
    "The AI model sent back an empty answer. Please try again or rephrase.",
    NoticeColour.WARNING,
)

NOT_ANSWERED = Notice(
    "Not Answered",
    "This message waited too long behind other answers in this channel, so it was not "
    "answered. Please send it again.",
    NoticeColour.WARNING,
)
"""Told, as a reply, to a direct trigger dropped from the queue unanswered (too old by the time
its turn came, or queued behind a turn that hung)."""


def respond_dropped(member_id: str) -> Notice:
    """Told in the channel of a `/respond` dropped from the queue unanswered, as `NOT_ANSWERED`
    is to a message: it has no message to reply to, so its asker is named (a mention in a
    notice pings no one)."""
    return Notice(
        "Not Answered",
        f"The /respond <@{member_id}> asked for waited too long behind other answers in this "
        "channel, so it was not answered. Please ask again.",
        NoticeColour.WARNING,
    )


CLEARED_BY_KILL = Notice(
    "Not Answered",
    "A /kill in this channel cleared the messages waiting for an answer, this one (and any "
    "other of yours) among them. Please send it again if you still want an answer.",
    NoticeColour.WARNING,
)
"""Told, as a reply to their newest, to a member whose queued messages another's /kill cleared
(`tomori.turns.cleared`)."""

NAMED_AT_MOST = 40
"""Members a `cleared_by_kill` notice names; the rest are counted."""


def cleared_by_kill(member_ids: Sequence[str]) -> Notice:
    """Told once to the members whose queued messages, scenes or /responds one /kill cleared,
    naming them, where a reply each will not do (`tomori.turns.cleared`). A mention in a
    notice pings no one."""
    shown = [f"<@{member}>" for member in member_ids[:NAMED_AT_MOST]]
    more = len(member_ids) - len(shown)
    named = ", ".join(shown) + (f" and {more} more" if more else "")
    return Notice(
        "Not Answered",
        f"A /kill in this channel cleared what was waiting for an answer, among it what {named} "
        "asked. Please ask again if you still want an answer.",
        NoticeColour.WARNING,
    )


NOT_DELIVERED = Notice(
    "Answer Cut Short",
    "Discord did not take the rest of this answer in time (it may be limiting this bot right "
    "now), so its end is missing. Please ask again if you need it.",
    NoticeColour.WARNING,
)
"""Told to a direct trigger whose answer Discord did not take in full within
`TOMORI_DELIVERY_TIMEOUT_MS` after the model had finished."""

KILL_DESCRIPTION = "Immediately stop the current stream and clear queued responses in this channel."

KILL_STOPPED = Notice(
    "Stream Stopped",
    "Stopped the active response stream (if any) and cleared queued responses in this channel.",
    NoticeColour.SUCCESS,
)

KILL_STOPPED_OWN = Notice(
    "Stream Stopped",
    "Stopped the response to you (if any), and cleared your queued messages in this channel.",
    NoticeColour.SUCCESS,
)

QUEUE_FULL = Notice(
    "Queue Full",
    "You have as many messages waiting for an answer here as one may: this one is not queued. "
    "Ask again once they are answered.",
    NoticeColour.WARNING,
)

KILL_NOTHING_TO_STOP = Notice(
    "Nothing to Stop",
    "There is no active response stream or queued response to clear in this channel.",
    NoticeColour.WARNING,
)

KILL_CHANNEL_REQUIRED = Notice(
    "Channel Required",
    "This command requires a channel to function properly.",
    NoticeColour.ERROR,
)

KILL_NOT_ALLOWED = Notice(
    "Not Allowed",
    "Only the person this response is for, or someone with Manage Messages, can stop it.",
    NoticeColour.ERROR,
)

KILL_FAILED = Notice(
    "Could Not Stop",
    "Something went wrong while stopping the response. Please try again.",
    NoticeColour.ERROR,
)

STILL_WORKING = Notice(
    "Still Working...",
    "This task is taking more steps than usual. Use `/kill` if you think I'm stuck.",
    NoticeColour.WARNING,
)

TOOL_ERROR_LOOP = Notice(
    "Tool Error Loop",
    "I kept running into tool errors and couldn't complete the request. Try rephrasing.",
    NoticeColour.ERROR,
)

THINKING_LOOP = Notice(
    "Thinking Loop",
    "I got stuck in a thinking loop and couldn't complete the request.",
    NoticeColour.WARNING,
)


def fallback_used(answered_by: str, failed: list[str]) -> Notice:
    """The small notice shown when a fallback answered after earlier models failed."""
    chain = ", ".join(f"`{label}`" for label in failed)
    return Notice(
        "Fallback Model Used", f"`{answered_by}` was used instead of {chain}.", NoticeColour.WARNING
    )


def cooldown_notice(retry_at: float) -> Notice:
    """Told once per cooldown window to someone who asked again too soon; Discord shows the
    `<t:...:R>` timestamp in each reader's own terms ("in 20 seconds")."""
    return Notice(
        "Slow Down",
        f"You can ask me again <t:{math.ceil(retry_at)}:R>.",
        NoticeColour.WARNING,
    )


def server_quota_notice(reset_at: float) -> Notice:
    """Told once per UTC day to someone whose server spent the tokens the bot's author gives it
    for a day (`TOMORI_SERVER_DAILY_TOKENS`)."""
    return Notice(
        "Daily Limit Reached",
        "This server has used the tokens it has for today. They reset at 00:00 UTC "
        f"(<t:{math.ceil(reset_at)}:R>).",
        NoticeColour.WARNING,
    )


def quota_notice(reset_at: float) -> Notice:
    """Told once per UTC day to someone who spent their tokens for the day in this server."""
    return Notice(
        "Daily Limit Reached",
        "You have used your tokens for today in this server. They reset at 00:00 UTC "
        f"(<t:{math.ceil(reset_at)}:R>).",
        NoticeColour.WARNING,
    )
