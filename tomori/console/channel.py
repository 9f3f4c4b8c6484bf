"""A simulated Discord channel in the terminal: the console's `ChannelPort` and notice sink.

The writer sends and edits messages here exactly as it would in Discord, so what the terminal
shows is what a channel would: each message the answer is cut into is marked with its number
(and, for a queued message's answer, the message it replies to), and a notice prints its title
and text as the embed would read.

Interactive (`live`), a message prints as it is sent and grows as it is edited; while a turn
has nothing new to show (before its first words, or while the next message of the answer is
written) a "tomori is typing…" line stands below, as Discord shows the bot typing, erased by
what comes next. The prompt names the number the next message gets (`you #3> `), and the draft
typed after it is shown by the channel (the terminal echoes nothing, see `terminal.py`), so it
is drawn again after anything printed over it. Otherwise (input piped in) each turn's output is
held and printed whole once the turn is over, so a transcript never interleaves two answers or
shows a message before its last edit. Either way the messages show in the order of their
numbers, as a Discord channel shows them: a message typed while an answer is written or held
shows before the first of the answer's messages numbered after it.

The channel also keeps its messages, for the history each turn is shown (`context`).
"""

from __future__ import annotations

import io
import os
from collections.abc import Collection
from typing import TextIO

from tomori.config.settings import Delivery, Settings
from tomori.console.history import ConsoleMessage, context, in_view
from tomori.console.text import notice_text, one_column, printable, width
from tomori.delivery.budget import ChannelPace
from tomori.delivery.notices import Notice
from tomori.delivery.port import Urgency, as_shown
from tomori.providers.base import ContextItem

TYPING = "tomori is typing…"
ERASE_LINE = "\r\x1b[K"
"""Back to the start of the line and clear it: how the typing line is taken away."""
CONSOLE_CHANNEL = "console"
"""The key of the console's one channel in its write bucket."""


class ConsoleChannel:
    """The one channel of a console session (see the module docstring)."""

    def __init__(self, out: TextIO, *, live: bool, delivery: Delivery = Delivery.MESSAGES) -> None:
        self._out = out
        self._live = live
        self._grows = delivery is Delivery.EDIT
        """A message sent may grow by edits: its line stays open until the next one."""
        self._messages: dict[int, ConsoleMessage] = {}
        self._next_id = 1
        self._shown: dict[int, str] = {}
        """Live: what of each message is on the terminal already."""
        self._turn: list[ConsoleMessage | str] | None = None
        """Piped: what the running turn put in the channel, in order, printed at its end."""
        self._in_turn = False
        self._after_turn: list[str] = []
        self._unshown: list[ConsoleMessage] = []
        """Messages typed, to show once no message numbered before them is still to show."""
        self._echoed: set[int] = set()
        """The numbers of the messages typed that were shown, or wait to be."""
        self._pace = ChannelPace()
        """A Discord channel's write bucket: the console shows an answer in the messages a
        Discord channel would (a rehearsal, not a faster stand-in)."""
        """The console's own lines that wait for the running turn's output to end."""
        self._line_open = False
        self._prompted = False
        """Live: the prompt (and the draft typed after it) is the last thing printed."""
        self._typing_shown = False
        """Live: the typing line is the last thing printed (its line not ended)."""
        self.channel_id = "console"
        """The channel's name in the lock store (the session's own database)."""

    # -- what the person types -----------------------------------------------------------------

    @property
    def next_number(self) -> int:
        """The number the channel's next message takes."""
        return self._next_id

    def post(self, text: str, *, command: bool = False) -> ConsoleMessage:
        """A message typed at the prompt: it joins the channel and is given its number."""
        message = self._add(text, from_bot=False)
        message.command = command
        return message

    def message_id(self, message: ConsoleMessage) -> str:
        """The message's ID in the lock store: its number."""
        return str(message.id)

    def message(self, message_id: str | None) -> ConsoleMessage | None:
        """The message with this store ID, if there is one."""
        number = message_id or ""
        return self._messages.get(int(number)) if number.isascii() and number.isdigit() else None

    def before(self, number: int) -> list[ConsoleMessage]:
        """The channel's messages numbered before `number`, in order."""
        return [message for message in self._messages.values() if message.id < number]

    def latest(self) -> ConsoleMessage | None:
        """The channel's last message a model may be shown (a command typed is none)."""
        shown = [m for m in self._messages.values() if not m.command]
        return shown[-1] if shown else None

    def context(
        self,
        trigger: ConsoleMessage | None,
        waiting: Collection[str],
        settings: Settings,
        system_prompt: str,
        voice: str | None = None,
        until: int | None = None,
    ) -> tuple[ContextItem, ...]:
        """What the model is shown of this channel (see `history.context`)."""
        shown = self.shown(trigger, waiting, settings, until)
        return context(shown, system_prompt, voice, trigger)

    def shown(
        self,
        trigger: ConsoleMessage | None,
        waiting: Collection[str],
        settings: Settings,
        until: int | None = None,
    ) -> list[ConsoleMessage]:
        """The messages the model is shown (see `history.in_view`), in order."""
        numbers = {str(m.id) for m in map(self.message, waiting) if m is not None}
        return in_view(
            self._messages.values(),
            trigger,
            numbers,
            settings.history_limit,
            self._next_id if until is None else until,
        )

    # -- a turn -------------------------------------------------------------------------------

    def begin_turn(self, trigger: ConsoleMessage) -> None:
        """Piped: hold the turn's output, after the message it answers. Either way, hold the
        console's own lines until the turn's output is done."""
        if not self._live:  # live, the prompt showed it as it was typed
            self.echo(trigger)
        self._in_turn = True
        if not self._live:
            self._turn = []
        self._show_typing()

    def end_turn(self) -> None:
        """Print what the turn held (piped), or end its last line (live); then the console's
        own lines that waited for it."""
        held, self._turn = self._turn, None
        for entry in held or ():
            if isinstance(entry, ConsoleMessage):
                self._show_typed(before=entry.id)
                self._print_message(entry)
            else:
                self._print(entry + "\n")
        self._end_line()
        self._show_typed()
        self._hide_typing()
        self._in_turn = False
        waited, self._after_turn = self._after_turn, []
        for line in waited:
            self._print(line + "\n")
        self._out.flush()

    def tell(self, notice: Notice, reply_to: str | None = None) -> None:
        """A notice of the console's own (a /kill's answer, one replying to a message, a
        command's): as `say`."""
        replied = self.message(reply_to)
        self.say(notice_text(notice, replied.id if replied is not None else None))

    def echo(self, message: ConsoleMessage) -> None:
        """A message typed, shown with its number, once: at once, or, while a turn runs,
        before the first of its messages numbered after it (or at its end)."""
        if message.id in self._echoed:
            return
        self._echoed.add(message.id)
        self._unshown.append(message)
        if not self._in_turn:
            self._show_typed()
            self._out.flush()

    def say(self, text: str) -> None:
        """A line of the console's own: at once, or after the running turn's output, so it
        never cuts into an answer."""
        if self._in_turn:
            self._after_turn.append(text)
            return
        self._end_line()
        self._print(text + "\n")
        self._out.flush()

    def prompt(self, draft: str = "") -> None:
        """Live: the prompt, with the number the next message gets, and what is typed of it;
        once, however often asked."""
        if self._prompted:
            return
        self._end_line()
        self._print(f"you #{self._next_id}> {draft}")
        self._prompted = self._line_open = True
        self._out.flush()

    def interject(self, text: str) -> None:
        """Live, in a turn: a line of the console's own about what the turn waits on, at once
        (not after the turn's output, as `say`'s lines are)."""
        self._end_line()
        self._print(text + "\n")
        self._out.flush()

    def ask(self, question: str, draft: str = "") -> None:
        """Live, in a turn: a question the turn waits on (`interject`), then the prompt to
        answer it at."""
        self.interject(question)
        self.prompt(draft)

    @property
    def prompted(self) -> bool:
        """Live: the prompt is showing, with the draft typed after it."""
        return self._prompted

    def typed(self, text: str) -> None:
        """Keys typed at the prompt, shown after it (not while an answer streams: the next
        prompt shows them)."""
        if self._prompted:
            self._out.write(printable(text))
            self._out.flush()

    def erased(self, text: str, draft: str) -> None:
        """`text` taken from the end of the draft at the prompt, leaving `draft`: rubbed out
        where each character is one column on the line, else the prompt drawn afresh below."""
        if not self._prompted or not text:
            return
        shown = printable(text)
        if all(one_column(character) for character in shown) and self._on_one_row(text, draft):
            self._out.write("\b \b" * len(shown))
            self._out.flush()
            return
        self._prompted = False
        self.prompt(draft)

    def entered(self) -> None:
        """Enter at the prompt: the line typed is done (the message keeps the prompt's number)."""
        if self._prompted:
            self._end_line()
            self._out.flush()

    # -- ChannelPort and NoticeSink -----------------------------------------------------------

    async def writable(self, urgency: Urgency) -> None:
        """When a Discord channel would take the write: its bucket, intermediate writes at
        its steady pace (a terminal has no limits, but the answer is shown as Discord would)."""
        async with self._pace.slot(CONSOLE_CHANNEL, spaced=urgency is Urgency.MORE):
            pass

    async def send(self, content: str, *, reply_to: str | None, urgency: Urgency) -> str:
        return self.post_as(None, content, reply_to)

    def post_as(self, speaker: str | None, content: str, reply_to: str | None) -> str:
        """A message of the bot's (`speaker` None) or a persona's, shown as it is sent."""
        replied = self.message(reply_to)
        message = self._add(content, from_bot=True, reply_to=replied.id if replied else None)
        message.speaker = speaker
        if self._turn is not None:
            self._turn.append(message)
        else:
            self._end_line()
            self._show_typed(before=message.id)
            self._print_header(message)
            self._grow(message)
            if not self._grows:  # the message is whole: the next one is being written
                self._end_line()
                self._show_typing()
        return self.message_id(message)

    async def edit(self, message_id: str, content: str, *, urgency: Urgency) -> None:
        message = self.message(message_id)
        assert message is not None  # the writer edits only what it sent
        message.text = content
        if self._turn is None:
            self._grow(message)

    async def post_notice(self, notice: Notice) -> None:
        """A notice of the running turn's own: printed with its output."""
        text = notice_text(notice)
        if self._turn is not None:
            self._turn.append(text)
            return
        self._end_line()
        self._print(text + "\n")
        self._show_typing()
        self._out.flush()

    # -- printing -----------------------------------------------------------------------------

    def _add(self, text: str, *, from_bot: bool, reply_to: int | None = None) -> ConsoleMessage:
        message = ConsoleMessage(self._next_id, text, from_bot, reply_to)
        self._next_id += 1
        self._messages[message.id] = message
        return message

    def _print_message(self, message: ConsoleMessage) -> None:
        self._end_line()
        self._print_header(message)
        self._print(as_shown(message.text) + "\n")

    def _show_typed(self, before: int | None = None) -> None:
        """The messages typed that wait to show, those numbered before `before` (every one
        when None), in order."""
        waiting = sorted(self._unshown, key=lambda message: message.id)
        shown = [m for m in waiting if before is None or m.id < before]
        self._unshown = waiting[len(shown) :]
        for message in shown:
            self._end_line()
            self._print(f"[you #{message.id}] {message.text}\n")

    def _print_header(self, message: ConsoleMessage) -> None:
        replying = f", replying to #{message.reply_to}" if message.reply_to is not None else ""
        self._print(f"[{_speaker(message)} #{message.id}{replying}]\n")

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
            self._print(f"[{_speaker(message)} #{message.id}, edited]\n{text}")
        self._shown[message.id] = text
        self._line_open = not text.endswith("\n")
        self._out.flush()

    def _end_line(self) -> None:
        if self._line_open:
            self._print("\n")
            self._line_open = False

    def _show_typing(self) -> None:
        """Live, in a turn, on a line of its own: the typing line, until anything prints."""
        if self._live and self._in_turn and not self._line_open and not self._typing_shown:
            self._out.write(TYPING)
            self._typing_shown = True
            self._out.flush()

    def _hide_typing(self) -> None:
        if self._typing_shown:
            self._out.write(ERASE_LINE)
            self._typing_shown = False

    def _on_one_row(self, text: str, draft: str) -> bool:
        """Whether rubbing `text` out from the end of the prompt's line (leaving `draft`) stays
        on the row the cursor is on: a backspace does not go back up a wrapped row."""
        try:
            columns = os.get_terminal_size(self._out.fileno()).columns
        except (OSError, ValueError, io.UnsupportedOperation):
            return True  # not a terminal's size to go by: as the line were short
        if columns <= 0:
            return True
        line = f"you #{self._next_id}> {draft}".rsplit("\n", 1)[-1]
        after = width(printable(line))
        before = after + width(printable(text))
        return before % columns != 0 and before // columns == after // columns

    def _print(self, text: str) -> None:
        self._hide_typing()
        self._prompted = False
        self._out.write(printable(text))


def _speaker(message: ConsoleMessage) -> str:
    """Who a message of the channel's is shown as: the persona, else the bot."""
    return printable(message.speaker) if message.speaker else "tomori"
