"""The summarizing request: the channel's summary so far and what fell out of its window.

The model is told plainly what it writes and that it is no message of the conversation, so a
test's model server (and a log) tells the summarizing request from a turn's by `INSTRUCTION`.
"""

from __future__ import annotations

from collections.abc import Sequence

from tomori.providers.base import ContextItem, Role, StreamRequest
from tomori.summary.store import Said, Summary

INSTRUCTION = (
    "You keep a short running summary of a chat channel, for a chat assistant that no longer"
    " sees its older messages. Rewrite the summary so far to take in the messages below:"
    " who said what that still matters (names, facts, open questions, decisions), in at most a"
    " few short paragraphs of plain prose. Write only the new summary."
)
NOTE_HEADER = (
    "[Note from the bot, not part of the conversation: a summary of this channel's earlier"
    " messages, which you no longer see]"
)
LINE_CHARS = 1_000
"""What of one message the summarizing model is shown: its start, as a summary needs."""


def summarizing_request(
    model: str, summary: Summary | None, said: Sequence[Said], answer_tokens: int
) -> StreamRequest:
    """The request that folds `said` into `summary` (None: the channel's first)."""
    before = summary.text if summary is not None and summary.text else "(none yet)"
    lines = "\n".join(said_line(item) for item in said)
    asked = f"Summary so far:\n{before}\n\nMessages to take in, oldest first:\n{lines}"
    context = (
        ContextItem(Role.SYSTEM, INSTRUCTION, pinned=True),
        ContextItem(Role.USER, asked, pinned=True),
    )
    return StreamRequest(model=model, context=context, max_output_tokens=answer_tokens)


def said_line(said: Said) -> str:
    line = " ".join(said.line.split())
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + "…"


def summary_note(summary: Summary | None) -> tuple[ContextItem, ...]:
    """The note a turn is shown its channel's summary in, before the history; none without one.
    A small model's budget cuts it from its end (`ContextItem.note`)."""
    if summary is None or not summary.text:  # only left-out members' messages passed yet
        return ()
    return (ContextItem(Role.USER, f"{NOTE_HEADER}\n{summary.text}", pinned=True, note=True),)
