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
shows a message before its last edit.

The channel also keeps its messages, for the history each turn is shown (`context`).
"""

from __future__ import annotations

import io
import os
import re
import time
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from typing import TextIO

from tomori.config.settings import Delivery, Settings
from tomori.delivery.budget import ChannelPace
from tomori.delivery.notices import Notice
from tomori.delivery.port import Urgency, as_shown
from tomori.delivery.sprite_markers import sprite_name, wore_sprite
from tomori.prompt.conversation import in_time_order
from tomori.providers.base import ContextItem, Role

TYPING = "tomori is typing…"
ERASE_LINE = "\r\x1b[K"
"""Back to the start of the line and clear it: how the typing line is taken away."""
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


CONTROLS = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f"
    r"\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]"
)
"""What a model could write to move the cursor, clear the screen or retitle the window (C0
and C1 controls), or to make text read other than it is: bidirectional overrides and
isolates (U+202E shows "txt.exe" as "exe.txt"), invisible marks and spaces, line and paragraph
separators. They print as escapes (`\\x1b`, `\\u202e`). The joiners (U+200C, U+200D) print as
they are: emoji and scripts are written with them."""


def _one_column(character: str) -> bool:
    """Whether the terminal shows `character` one column wide (wide and combining ones are
    not; a tab is not)."""
    if not character.isprintable() or unicodedata.combining(character):
        return False
    return unicodedata.east_asian_width(character) not in ("W", "F")


def _width(text: str) -> int:
    """The columns `text` takes on a terminal (wide characters two, combining ones none)."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _escaped(control: re.Match[str]) -> str:
    code = ord(control.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


TIMESTAMP = re.compile(r"<t:(-?\d{1,12})(?::[tTdDfFR])?>")
"""Discord's timestamp markup (`<t:1700000000:R>`), which each reader sees in their own terms."""


def notice_text(notice: Notice, reply_to: int | None = None, now: float | None = None) -> str:
    """A notice as the terminal shows it: its title (and the message it replies to), then what
    the embed says, its timestamps as Discord would show them ("in 9 s")."""
    replying = "" if reply_to is None else f", replying to #{reply_to}"
    at = time.time() if now is None else now
    description = TIMESTAMP.sub(
        lambda found: _relative(int(found.group(1)) - at), notice.description
    )
    return f"[{notice.title}{replying}] {description}"


def _relative(seconds: float) -> str:
    left = abs(round(seconds))
    amount = next(
        f"{left // size} {unit}"
        for size, unit in ((3600, "h"), (60, "min"), (1, "s"))
        if left >= size or size == 1
    )
    return f"in {amount}" if seconds >= 0 else f"{amount} ago"


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

    def context(
        self,
        trigger: ConsoleMessage | None,
        waiting: Collection[str],
        settings: Settings,
        system_prompt: str,
        voice: str | None = None,
        until: int | None = None,
    ) -> tuple[ContextItem, ...]:
        """The system prompt, the recent messages (the answers since a queued trigger among
        them), then the trigger: as the cog shows a Discord channel's. `voice` is the persona
        that answers (None: the bot): its own messages are the assistant's, any other
        speaker's are named, as the cog shows a persona its channel. `until`: the channel as
        it stood when the turn read it, before this message number. With no trigger (a turn
        no message asks for, a scene), the channel's last messages before `until`."""
        bound = self._next_id if until is None else until
        before = bound if trigger is None else trigger.id
        recent = [m for m in self._messages.values() if m.id < before]
        recent = recent[-settings.history_limit :] if settings.history_limit else []
        after = [
            m for m in self._messages.values() if trigger is not None and trigger.id < m.id < bound
        ]  # as the cog reads them: the first `history_limit` after the trigger, then its own
        since = [m for m in after[: settings.history_limit] if m.from_bot]
        numbers = {str(m.id) for m in map(self.message, waiting) if m is not None}
        return self._items(in_time_order(recent, since, trigger, numbers), system_prompt, voice)

    @staticmethod
    def _items(
        shown: list[ConsoleMessage], system_prompt: str, voice: str | None
    ) -> tuple[ContextItem, ...]:
        items = [ContextItem(Role.SYSTEM, system_prompt)]
        for message in shown:
            text = message.text.strip()[:MAX_ITEM_CHARS]  # as Discord keeps a message's text
            if message.command:
                continue
            if message.from_bot and message.speaker == voice:
                items.append(ContextItem(Role.ASSISTANT, text))
            elif message.from_bot and voice and wore_sprite(voice, message.speaker or ""):
                items.append(ContextItem(Role.ASSISTANT, f"{message.speaker}: {text}"))
            elif message.from_bot:
                items.append(ContextItem(Role.USER, f"{message.speaker or 'tomori'}: {text}"))
            else:
                items.append(ContextItem(Role.USER, f"{USER_NAME}: {text}"))
        return tuple(items)

    # -- a turn -------------------------------------------------------------------------------

    def begin_turn(self, trigger: ConsoleMessage) -> None:
        """Piped: hold the turn's output, after the message it answers. Either way, hold the
        console's own lines until the turn's output is done."""
        self._in_turn = True
        if not self._live:
            self._turn = [trigger]
        self._show_typing()

    def end_turn(self) -> None:
        """Print what the turn held (piped), or end its last line (live); then the console's
        own lines that waited for it."""
        held, self._turn = self._turn, None
        for entry in held or ():
            if isinstance(entry, ConsoleMessage):
                self._print_message(entry)
            else:
                self._print(entry + "\n")
        self._end_line()
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
        """A message typed, shown with its number (as `say`)."""
        self.say(f"[you #{message.id}] {message.text}")

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

    @property
    def prompted(self) -> bool:
        """Live: the prompt is showing, with the draft typed after it."""
        return self._prompted

    def typed(self, text: str) -> None:
        """Keys typed at the prompt, shown after it (not while an answer streams: the next
        prompt shows them)."""
        if self._prompted:
            self._out.write(CONTROLS.sub(_escaped, text))
            self._out.flush()

    def erased(self, text: str, draft: str) -> None:
        """`text` taken from the end of the draft at the prompt, leaving `draft`: rubbed out
        where each character is one column on the line, else the prompt drawn afresh below."""
        if not self._prompted or not text:
            return
        shown = CONTROLS.sub(_escaped, text)
        if all(_one_column(character) for character in shown) and self._on_one_row(text, draft):
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

    def as_persona(self, name: str) -> PersonaChannel:
        """The port a persona posts through: its messages print under its name."""
        return PersonaChannel(self, name)

    def post_as(self, speaker: str | None, content: str, reply_to: str | None) -> str:
        """A message of the bot's (`speaker` None) or a persona's, shown as it is sent."""
        replied = self.message(reply_to)
        message = self._add(content, from_bot=True, reply_to=replied.id if replied else None)
        message.speaker = speaker
        if self._turn is not None:
            self._turn.append(message)
        else:
            self._end_line()
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
        if message.from_bot:
            self._print_header(message)
            self._print(as_shown(message.text) + "\n")
        else:
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
        after = _width(CONTROLS.sub(_escaped, line))
        before = after + _width(CONTROLS.sub(_escaped, text))
        return before % columns != 0 and before // columns == after // columns

    def _print(self, text: str) -> None:
        self._hide_typing()
        self._prompted = False
        self._out.write(CONTROLS.sub(_escaped, text))


def _speaker(message: ConsoleMessage) -> str:
    """Who a message of the channel's is shown as: the persona, else the bot."""
    return CONTROLS.sub(_escaped, message.speaker) if message.speaker else "tomori"


class PersonaChannel:
    """A persona's `ChannelPort` in the console: the channel's, its messages under its name
    (a webhook cannot reply in Discord, so neither does a persona here)."""

    def __init__(self, channel: ConsoleChannel, name: str) -> None:
        self._channel = channel
        self._persona = name
        self._name = name

    def wear(self, label: str | None) -> None:
        """Its next messages wear sprite `label`: they print under `Name (label)`, the name a
        Discord channel shows them under (None: its own name)."""
        self._name = sprite_name(self._persona, label)

    async def writable(self, urgency: Urgency) -> None:
        """As the channel's: a webhook's messages count in the channel's bucket too."""
        await self._channel.writable(urgency)

    async def send(self, content: str, *, reply_to: str | None, urgency: Urgency) -> str:
        return self._channel.post_as(self._name, content, None)

    async def edit(self, message_id: str, content: str, *, urgency: Urgency) -> None:
        await self._channel.edit(message_id, content, urgency=urgency)
