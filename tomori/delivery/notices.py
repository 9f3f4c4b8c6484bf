"""What the bot tells a channel when something went wrong, as plain data.

The cog renders a `Notice` as an embed; the core never builds one. No notice carries an
exception's text, a key or a URL, so nothing secret can leak through one. A notice's words
are the catalog's (`tomori.words`): it reads in English as built, and in its reader's language
where the place showing it knows one (`Notice.in_locale`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from tomori.words import Listed, Said, Text, said, say

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
    words: tuple[Text, Text] | None = None
    """The title and description as the catalog's words, to be said in a reader's language;
    None: texts of their own, shown as they are."""

    @classmethod
    def of(cls, title: Text, description: Text, colour: NoticeColour) -> Notice:
        """A notice of these words (a text of its own, such as an error's, stays as it is)."""
        return cls(say(title), say(description), colour, (title, description))

    def in_locale(self, locale: str) -> Notice:
        """This notice as a reader of `locale` reads it (`tomori.words.chosen`)."""
        if self.words is None:
            return self
        title, description = self.words
        return Notice(say(title, locale), say(description, locale), self.colour, self.words)


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


def _notice(title: str, description: Said, colour: NoticeColour) -> Notice:
    return Notice.of(said(f"title.{title}"), description, colour)


IDLE_TIMEOUT = _notice("timed_out", said("notice.idle_timeout"), NoticeColour.WARNING)

FIRST_TOKEN_TIMEOUT = _notice("timed_out", said("notice.first_token_timeout"), NoticeColour.WARNING)

GENERATION_ERROR = _notice("generation_error", said("notice.generation_error"), NoticeColour.ERROR)

RATE_LIMITED = _notice("rate_limited", said("notice.rate_limited"), NoticeColour.WARNING)

KEY_REFUSED = _notice("key_refused", said("notice.key_refused"), NoticeColour.ERROR)


def refused_by_provider(reason: str) -> Notice:
    """Told when a provider refused the turn's content (a content filter): its own reason, and
    that no other model was asked, which might have answered what it refused. `reason` is
    `ProviderError.reason`: short, and free of keys and links."""
    description = said("notice.refused_by_provider", reason=reason)
    return _notice("refused_by_provider", description, NoticeColour.WARNING)


EMPTY_RESPONSE = _notice("empty_response", said("notice.empty_response"), NoticeColour.WARNING)

TOO_LONG = _notice("too_long", said("notice.too_long"), NoticeColour.WARNING)
"""Told when the last model refused the request as too long for its context though nothing
was left to cut: the message answered (with what it replies to) is what does not fit."""

NOT_ANSWERED = _notice("not_answered", said("notice.not_answered"), NoticeColour.WARNING)
"""Told, as a reply, to a direct trigger dropped from the queue unanswered (too old by the time
its turn came, or queued behind a turn that hung)."""


def respond_dropped(member_id: str) -> Notice:
    """Told in the channel of a `/respond` dropped from the queue unanswered, as `NOT_ANSWERED`
    is to a message: it has no message to reply to, so its asker is named (a mention in a
    notice pings no one)."""
    description = said("notice.respond_dropped", member=member_id)
    return _notice("not_answered", description, NoticeColour.WARNING)


CLEARED_BY_KILL = _notice("not_answered", said("notice.cleared_by_kill"), NoticeColour.WARNING)
"""Told, as a reply to their newest, to a member whose queued messages another's /kill cleared
(`tomori.turns.cleared`)."""

NAMED_AT_MOST = 40
"""Members a `cleared_by_kill` notice names; the rest are counted."""


def cleared_by_kill(member_ids: Sequence[str]) -> Notice:
    """Told once to the members whose queued messages, scenes or /responds one /kill cleared,
    naming them, where a reply each will not do (`tomori.turns.cleared`). A mention in a
    notice pings no one."""
    shown = Listed(tuple(f"<@{member}>" for member in member_ids[:NAMED_AT_MOST]), last=False)
    more = len(member_ids) - len(shown.items)
    named: Listed | Said = said("list.more", named=shown, more=more) if more else shown
    description = said("notice.cleared_by_kill_named", named=named)
    return _notice("not_answered", description, NoticeColour.WARNING)


NOT_DELIVERED = _notice("answer_cut_short", said("notice.not_delivered"), NoticeColour.WARNING)
"""Told to a direct trigger whose answer Discord did not take in full within
`TOMORI_DELIVERY_TIMEOUT_MS` after the model had finished."""

KILL_DESCRIPTION = "Immediately stop the current stream and clear queued responses in this channel."

KILL_STOPPED = _notice("stream_stopped", said("notice.kill_stopped"), NoticeColour.SUCCESS)

KILL_STOPPED_OWN = _notice("stream_stopped", said("notice.kill_stopped_own"), NoticeColour.SUCCESS)

QUEUE_FULL = _notice("queue_full", said("notice.queue_full"), NoticeColour.WARNING)

KILL_NOTHING_TO_STOP = _notice(
    "nothing_to_stop", said("notice.kill_nothing_to_stop"), NoticeColour.WARNING
)

KILL_CHANNEL_REQUIRED = _notice(
    "channel_required", said("notice.kill_channel_required"), NoticeColour.ERROR
)

KILL_NOT_ALLOWED = _notice("not_allowed", said("notice.kill_not_allowed"), NoticeColour.ERROR)

KILL_FAILED = _notice("could_not_stop", said("notice.kill_failed"), NoticeColour.ERROR)

STILL_WORKING = _notice("still_working", said("notice.still_working"), NoticeColour.WARNING)

TOOL_ERROR_LOOP = _notice("tool_error_loop", said("notice.tool_error_loop"), NoticeColour.ERROR)

THINKING_LOOP = _notice("thinking_loop", said("notice.thinking_loop"), NoticeColour.WARNING)


def memory_saved(memory_id: int, text: str) -> Notice:
    """Told after an answer for each memory its turn saved: every save is visible, with the
    way to erase it (`/memory forget`)."""
    description = said("notice.memory_saved", id=memory_id, text=text)
    return _notice("memory_saved", description, NoticeColour.SUCCESS)


def memory_forgotten(memory_id: int) -> Notice:
    """Told after an answer for each memory its turn forgot: erasing is as visible as saving."""
    description = said("notice.memory_forgotten", id=memory_id)
    return _notice("memory_forgotten", description, NoticeColour.WARNING)


def fallback_used(answered_by: str, failed: list[str]) -> Notice:
    """The small notice shown when a fallback answered after earlier models failed."""
    chain = Listed(tuple(f"`{label}`" for label in failed), last=False)
    description = said("notice.fallback_used", answered_by=answered_by, chain=chain)
    return _notice("fallback_used", description, NoticeColour.WARNING)


def cooldown_notice(retry_at: float) -> Notice:
    """Told once per cooldown window to someone who asked again too soon; Discord shows the
    `<t:...:R>` timestamp in each reader's own terms ("in 20 seconds")."""
    description = said("notice.cooldown", at=math.ceil(retry_at))
    return _notice("slow_down", description, NoticeColour.WARNING)


def server_quota_notice(reset_at: float) -> Notice:
    """Told once per UTC day to someone whose server spent the tokens the bot's author gives it
    for a day (`TOMORI_SERVER_DAILY_TOKENS`)."""
    description = said("notice.server_quota", at=math.ceil(reset_at))
    return _notice("daily_limit", description, NoticeColour.WARNING)


def quota_notice(reset_at: float) -> Notice:
    """Told once per UTC day to someone who spent their tokens for the day in this server."""
    description = said("notice.quota", at=math.ceil(reset_at))
    return _notice("daily_limit", description, NoticeColour.WARNING)
