"""What lets a user interrupt the answer they asked for, written once: a stop word, and which
of a user's messages is a follow-up of it (a stop word that stopped an answer is not shown to
the model: `tomori.prompt.conversation.Unshown`). Nothing here knows Discord; the cog passes
text with its mentions already named, and the personas a message addresses.

A follow-up must be addressed as the running turn's trigger was (`follow_up_key`): a message
to another persona is a new question for it, queued as any other.
"""

from __future__ import annotations

import re
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
