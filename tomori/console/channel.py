"""A simulated Discord channel in the terminal: the console's `ChannelPort` and notice sink.

The writer sends and edits messages here exactly as it would in Discord, so what the terminal
shows is what a channel would: each message the answer is cut into is marked with its number
(and, for a queued message's answer, the message it replies to), and a notice prints its title
and text as the embed would read.

Interactive (`live`), a message prints as it is sent and grows as it is edited. Otherwise
(input piped in) each turn's output is held and printed whole once the turn is over, so a
transcript never interleaves two answers or shows a message before its last edit.

The channel also keeps its messages, for the history each turn is shown (`context`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import TextIO

from tomori.config.settings import Settings
from tomori.delivery.notices import Notice
from tomori.delivery.port import Urgency, as_shown
from tomori.prompt.conversation import in_time_order
from tomori.providers.base import ContextItem, Role

PROMPT = "you> "
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


CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""What a model could write to move the cursor, clear the screen or retitle the window: a
Discord channel shows such characters inertly, so the terminal is shown them as escapes."""


def _escaped(control: re.Match[str]) -> str:
    return f"\\x{ord(control.group()):02x}"


def notice_text(notice: Notice, reply_to: int | None = None) -> str:
    """A notice as the terminal shows it: its title (and the message it replies to), then what
    the embed says."""
    replying = "" if reply_to is None else f", replying to #{reply_to}"
    return f"[{notice.title}{replying}] {notice.description}"


class ConsoleChannel:
    """The one channel of a console session (see the module docstring)."""

    def __init__(self, out: TextIO, *, live: bool) -> None:
        self._out = out
        self._live = live
        self._messages: dict[int, ConsoleMessage] = {}
        self._next_id = 1
        self._shown: dict[int, str] = {}
        """Live: what of each message is on the terminal already."""
        self._turn: list[ConsoleMessage | str] | None = None
        """Piped: what the running turn printed, held (its messages, and notices as text)."""
        """Piped: what the running turn put in the channel, in order, printed at its end."""
        self._line_open = False
        self.channel_id = "console"
        """The channel's name in the lock store (the session's own database)."""

    # -- what the person types -----------------------------------------------------------------

    def post(self, text: str) -> ConsoleMessage:
        """A message typed at the prompt: it joins the channel and is given its number."""
        return self._add(text, from_bot=False)

    def message_id(self, message: ConsoleMessage) -> str:
        """The message's ID in the lock store: its number."""
        return str(message.id)

    def message(self, message_id: str | None) -> ConsoleMessage | None:
        """The message with this store ID, if there is one."""
        number = message_id or ""
        return self._messages.get(int(number)) if number.isascii() and number.isdigit() else None

    def context(
        self, trigger: ConsoleMessage, waiting: Collection[str], settings: Settings
    ) -> tuple[ContextItem, ...]:
        """The system prompt, the recent messages (the answers since a queued trigger among
        them), then the trigger: as the cog shows a Discord channel's."""
        recent = [m for m in self._messages.values() if m.id < trigger.id]
        recent = recent[-settings.history_limit :] if settings.history_limit else []
        since = [m for m in self._messages.values() if m.id > trigger.id and m.from_bot]
        numbers = {str(m.id) for m in map(self.message, waiting) if m is not None}
        shown = in_time_order(recent, since, trigger, numbers)
        items = [ContextItem(Role.SYSTEM, settings.system_prompt)]
        for message in shown:
            text = message.text[:MAX_ITEM_CHARS]
            if message.from_bot:
                items.append(ContextItem(Role.ASSISTANT, text))
            else:
                items.append(ContextItem(Role.USER, f"{USER_NAME}: {text}"))
        return tuple(items)

    # -- a turn -------------------------------------------------------------------------------

    def begin_turn(self, trigger: ConsoleMessage) -> None:
        """Piped: hold the turn's output, after the message it answers."""
        if not self._live:
            self._turn = [trigger]

    def end_turn(self) -> None:
        """Print what the turn held (piped), or end its last line (live)."""
        held, self._turn = self._turn, None
        for entry in held or ():
            if isinstance(entry, ConsoleMessage):
                self._print_message(entry)
            else:
                self._print(entry + "\n")
        self._end_line()
        self._out.flush()

    def tell(self, notice: Notice, reply_to: str | None = None) -> None:
        """A notice (a turn's own, a /kill's answer, or one replying to a message): after the
        running turn's output if one is held, else at once."""
        replied = self.message(reply_to)
        text = notice_text(notice, replied.id if replied is not None else None)
        if self._turn is not None:
            self._turn.append(text)
            return
        self._end_line()
        self._print(text + "\n")
        self._out.flush()

    def say(self, text: str) -> None:
        """A line of the console's own, never held."""
        self._end_line()
        self._print(text + "\n")
        self._out.flush()

    def prompt(self) -> None:
        """Live: the prompt, which the line typed after it ends."""
        self._end_line()
        self._print(PROMPT)
        self._out.flush()

    # -- ChannelPort and NoticeSink -----------------------------------------------------------

    async def writable(self, urgency: Urgency) -> None:
        """At once: a terminal has no rate limits."""

    async def send(self, content: str, *, reply_to: str | None, urgency: Urgency) -> str:
        replied = self.message(reply_to)
        message = self._add(content, from_bot=True, reply_to=replied.id if replied else None)
        if self._turn is not None:
            self._turn.append(message)
        else:
            self._end_line()
            self._print_header(message)
            self._grow(message)
        return self.message_id(message)

    async def edit(self, message_id: str, content: str, *, urgency: Urgency) -> None:
        message = self.message(message_id)
        assert message is not None  # the writer edits only what it sent
        message.text = content
        if self._turn is None:
            self._grow(message)

    async def post_notice(self, notice: Notice) -> None:
        self.tell(notice)  # held with the running turn's output, as a /kill's answer is

    # -- printing -----------------------------------------------------------------------------

    def _add(self, text: str, *, from_bot: bool, reply_to: int | None = None) -> ConsoleMessage:
        message = ConsoleMessage(self._next_id, text, from_bot, reply_to)
        self._next_id += 1
        self._messages[message.id] = message
        return message

    def _print_message(self, message: ConsoleMessage) -> None:
        self._end_line()
        if message.from_bot:
            self._print_header(message)
            self._print(as_shown(message.text) + "\n")
        else:
            self._print(f"[you #{message.id}] {message.text}\n")

    def _print_header(self, message: ConsoleMessage) -> None:
        replying = f", replying to #{message.reply_to}" if message.reply_to is not None else ""
        self._print(f"[tomori #{message.id}{replying}]\n")

    def _grow(self, message: ConsoleMessage) -> None:
        """Live: print what the message shows beyond what is on the terminal already.

        A message the writer edits only ever grows; should an edit change what is shown, the
        message prints again whole, marked as edited.
        """
        text = as_shown(message.text)
        shown = self._shown.get(message.id, "")
        if text.startswith(shown):
            self._print(text[len(shown) :])
        else:
            self._end_line()
            self._print(f"[tomori #{message.id}, edited]\n{text}")
        self._shown[message.id] = text
        self._line_open = not text.endswith("\n")
        self._out.flush()

    def _end_line(self) -> None:
        if self._line_open:
            self._print("\n")
            self._line_open = False

    def _print(self, text: str) -> None:
        self._out.write(CONTROLS.sub(_escaped, text))
