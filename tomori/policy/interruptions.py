"""What lets a user interrupt the answer they asked for, written once: a stop word, which
messages stopped an answer, and which of a user's messages is a follow-up of it. Nothing here
knows Discord; the cog passes text with its mentions already named, and the personas a
message addresses.

A follow-up must be addressed as the running turn's trigger was (`follow_up_key`): a message
to another persona is a new question for it, queued as any other.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Collection, Sequence

from tomori.config.settings import stop_word_form

MENTION = re.compile(r"<@!?\d+>")
"""A user mention as Discord writes it: the bot's own, before a stop word, says nothing more."""


def is_stop_word(content: str, words: Collection[str]) -> bool:
    """Whether the message says only one of `words` (`TOMORI_STOP_WORDS`), whatever its case,
    with mentions and closing punctuation around it ("@Tomori Stop!" is a stop)."""
    if not words:
        return False
    return stop_word_form(MENTION.sub(" ", content)) in words


def follow_up_key(personas: Sequence[str]) -> str:
    """Whom a message is addressed to, as follow-ups compare it: the bot, or its personas."""
    return "bot" if not personas else "personas:" + ",".join(personas)


class Stops:
    """The messages that stopped an answer (a stop word), the latest `keep`: the model is not
    shown them, since "stop" read as conversation would tell the next answer to stop. Only
    this process's: one that stopped a turn through another process is shown as it is."""

    def __init__(self, keep: int = 1_024) -> None:
        self._keep = keep
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, message_id: str) -> None:
        self._ids[message_id] = None
        while len(self._ids) > self._keep:
            self._ids.popitem(last=False)

    def discard(self, message_id: str) -> None:
        self._ids.pop(message_id, None)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids
