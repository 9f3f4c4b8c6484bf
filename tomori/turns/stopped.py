"""What a turn's model is told of the answers stops ended before it: one request-only note.

A question whose answer /kill or a stop word stopped, or that a stop took off the queue,
stays in the channel: shown it beside the next message (one user turn, when the stopped answer
showed nothing), the model takes it up again, and runs again the tool call its user had just
stopped. The note names each such message as the model is shown it, says what became of its
answer, and asks for none unless someone asks again; a question its asker followed up is
answered with what they added, as a follow-up's turn does. It says nothing of who stopped it.
The channel's stops are `tomori.locks.stopped`'s; one whose message the turn does not show is
left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from tomori.locks.stopped import Stop, StoppedAnswer
from tomori.providers.base import ContextItem, Role
from tomori.turns.surface import Context, Reading

HEADER = "[Note from the bot, not part of the conversation: answers stopped before this one]"
QUOTED_CHARS = 80
"""How much of a message the note quotes: enough to know it among the messages shown."""
NOT_AGAIN = "Do not answer it unless someone asks again."


def stopped_notices(
    stopped: Sequence[StoppedAnswer], reading: Reading, trigger_id: str | None
) -> Context:
    """The note on `stopped` (oldest first) for a turn that read `reading`, answering the
    message `trigger_id` (None: no message); none when it shows none of them."""
    lines = []
    for answer in stopped:
        shown = None if answer.message_id == trigger_id else reading.quoted(answer.message_id)
        if shown is not None:
            lines.append(f"- {what_became(answer, quote(shown))}")
    if not lines:
        return ()
    return (ContextItem(Role.USER, "\n".join([HEADER, *lines])),)


def what_became(answer: StoppedAnswer, quoted: str) -> str:
    """One line of the note: what became of the answer to the message `quoted`."""
    if answer.stop is Stop.CLEARED:
        return f"{quoted} was taken off the queue by a stop before its answer began. {NOT_AGAIN}"
    shown = "after the part of it shown above" if answer.shown else "before it showed anything"
    if answer.stop is Stop.FOLLOWED_UP:
        if answer.shown:
            return (
                f"Your answer to {quoted} was cut short {shown}, because its author wrote "
                "again: answer what they added, without repeating what you said."
            )
        return (
            f"Your answer to {quoted} was stopped {shown}, because its author wrote again: "
            "answer it together with what they added."
        )
    if answer.tool is None:
        return f"Your answer to {quoted} was stopped {shown}. {NOT_AGAIN}"
    return (
        f"Your answer to {quoted} was stopped {shown}, while the tool {answer.tool} was "
        f"running. Do not answer it, nor call {answer.tool} for it again, unless someone asks "
        "again."
    )


def quote(shown: str) -> str:
    """A message as the model is shown it, quoted on one line, its start at most."""
    text = " ".join(shown.split())
    if len(text) > QUOTED_CHARS:
        text = text[: QUOTED_CHARS - 1].rstrip() + "…"
    return f'"{text}"'
