"""The stream writer that puts a pass's text into a Discord channel, in either delivery mode.

It talks to a `ChannelPort` (writable, send, edit), which the cog implements over nextcord or
discord.py; nothing here knows either library. Every request goes through the pass's one
`Sender` (`sender.py`), which composes nothing until the channel may be written to, so
whatever came meanwhile goes out in that one request. The two modes are two writers over it:

- `messages` mode (`MessagesWriter`, the default, as TomoriBot): text released at safe
  boundaries, each send carrying every released segment that fits one message; never edited.
- `edit` mode (`EditWriter`): one message grows by edits, and goes on in a new one when full.

`ChannelWriter(port, answer, delivery=...)` gives the writer of the mode asked for. What they
share is here: a persona's sprite markers (`tomori.delivery.sprite_markers`) are taken out of
the text, each that changes the sprite ending the message before it, what follows going out
in new messages once the port wears that sprite; and the answer's ceiling: one answer shows
at most `max_answer_chars` characters, counted over the turn (see `ceiling`); when more would
follow, the text is cut where nothing breaks, the last message ends with `CUT_NOTE`, and
`feed` raises `AnswerCut`, so the pass stops reading. A writer's place in that life is its `Phase`.
"""

from __future__ import annotations

import contextlib
from collections import deque
from enum import Enum
from typing import Any

from tomori.config.settings import DEFAULT_MAX_ANSWER_CHARS, Delivery
from tomori.delivery.port import AnswerCut, AnswerRecord, ChannelPort, DestinationUnreachable
from tomori.delivery.sender import Sender
from tomori.delivery.sprite_markers import SpriteSwitch, Wardrobe

FIRST_GATHER_S = 0.25
"""Messages mode: how long the turn's first message waits for more of the answer (all of it,
if the model gives it at once), a quarter second a reader does not notice."""


class Phase(Enum):
    """Where a writer is in its answer (ended or not is the sender's `ended`)."""

    BEFORE_TEXT = "before text"
    """Nothing visible came yet: an answer whose earlier passes filled the ceiling is cut at
    its first visible text."""
    WRITING = "writing"
    CUT = "cut"
    """The ceiling is reached: nothing more is shown, and `feed` raises `AnswerCut`."""


class ChannelWriter:
    """A `StreamWriter` for one pass into one channel; the mode's writer (see above)."""

    def __new__(cls, *args: Any, delivery: Delivery = Delivery.MESSAGES, **options: Any) -> Any:
        if cls is ChannelWriter:  # the writer of the mode asked for (imported here: they
            from tomori.delivery.edit_writer import EditWriter  # are this class's subclasses)
            from tomori.delivery.messages_writer import MessagesWriter

            cls = EditWriter if delivery is Delivery.EDIT else MessagesWriter
        return super().__new__(cls)

    def __init__(
        self,
        port: ChannelPort,
        answer: AnswerRecord,
        *,
        delivery: Delivery = Delivery.MESSAGES,
        edit_interval_s: float = 1.0,
        max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
        first_gather_s: float = FIRST_GATHER_S,
        wardrobe: Wardrobe | None = None,
    ) -> None:
        gathers = delivery is Delivery.MESSAGES
        self._sender = Sender(
            port,
            answer,
            gather_first_s=first_gather_s if gathers else None,
            wardrobe=wardrobe,
            unreachable=self._drop_waiting,
        )
        self._answer = answer
        self._edit_interval_s = edit_interval_s
        self._pending: deque[str | SpriteSwitch] = deque()
        """Messages mode: segments; edit mode: text as fed; both: the sprite switches between."""
        self._markers = wardrobe.markers() if wardrobe is not None else None
        self._wearing: str | None = None
        """The sprite the text fed now is shown with (None: the persona's own avatar)."""
        self._delivered: list[str] = []
        """The text of each message that is whole, in order."""
        # the ceiling: the characters this pass may show (earlier passes of the turn showed
        # the rest)
        self._limit = max_answer_chars - sum(len(shown.text) for shown in answer.delivered)
        self._phase = Phase.BEFORE_TEXT
        self._noted = False
        """`cut` was called: `finish` ends the answer with `CUT_NOTE`."""

    # -- StreamWriter -------------------------------------------------------------------------

    def feed(self, text: str) -> None:
        if self._markers is None:
            self._feed_text(text)
            return
        for piece in self._markers.feed(text):
            if isinstance(piece, SpriteSwitch):
                self._switch(piece)
            else:
                self._feed_text(piece)

    def cut(self) -> None:
        self._noted = not self._is_cut  # (a cut at the ceiling has its note already)

    async def finish(self) -> None:
        if self._markers is not None:
            with contextlib.suppress(AnswerCut, DestinationUnreachable):
                for piece in self._markers.finish():  # a line that may have been a marker
                    if isinstance(piece, SpriteSwitch):
                        self._switch(piece)
                    else:
                        self._feed_text(piece)
        self._sender.ended.set()
        self._ending()
        if self._pending:
            self._start()
        await self._sender.wait()
        if self._sender.failure is not None:
            raise self._sender.failure
        await self._ended()

    async def settle(self) -> None:
        if self._markers is not None:
            self._markers.drop()  # what it holds is the start of the unfinished line
        self._keep_lines()
        await self.finish()

    def abandon(self) -> None:
        if self._markers is not None:
            self._markers.drop()
        self._drop_waiting()
        self._sender.stop()  # a request waiting for the channel's turn is not on the wire

    @property
    def delivered_text(self) -> str:
        return "".join(self._delivered)

    @property
    def sprites(self) -> tuple[str, ...]:
        """The sprite of each message this writer sent wearing one (`Wardrobe.shown`), in
        order, repeats kept."""
        return tuple(self._sender.sprites)

    async def aclose(self) -> None:
        """Stop sending: what is not on the wire is dropped, what is may finish."""
        self.abandon()
        await self._sender.wait()

    # -- what both modes share ----------------------------------------------------------------

    @property
    def _is_cut(self) -> bool:
        return self._phase is Phase.CUT

    def _switch(self, switch: SpriteSwitch) -> None:
        """A sprite marker: the text before it ends its message, the text after it wears the
        sprite in new messages. A marker of the sprite worn already changes nothing: a model
        that starts each line with its own name ("Aria:") is not one message per line."""
        if self._sender.failure is not None:
            raise self._sender.failure
        if self._is_cut:
            raise AnswerCut
        if switch.label == self._wearing:
            return
        self._wearing = switch.label
        self._end_message()
        self._pending.append(switch)
        self._start()

    def _feed_text(self, text: str) -> None:
        if self._sender.failure is not None:
            raise self._sender.failure
        if self._phase is Phase.BEFORE_TEXT and text.strip():
            # an earlier pass of the turn may have filled the ceiling
            self._phase = Phase.CUT if self._limit <= 0 else Phase.WRITING
        if self._is_cut:
            raise AnswerCut
        self._take(text)

    def _start(self) -> None:
        self._sender.start(self._deliver)

    # -- what each mode does ------------------------------------------------------------------

    def _take(self, text: str) -> None:
        """Visible text fed, the ceiling not reached before it."""
        raise NotImplementedError

    def _end_message(self) -> None:
        """A sprite marker came: what came before it is one message's end."""
        raise NotImplementedError

    def _ending(self) -> None:
        """`finish` was called: what is held back goes now."""
        raise NotImplementedError

    async def _deliver(self) -> None:
        """The sender task: send what waits, until nothing does."""
        raise NotImplementedError

    async def _ended(self) -> None:
        """Everything was sent: the last touches (a code block closed, the cut note)."""
        raise NotImplementedError

    def _keep_lines(self) -> None:
        """The stream stalled: drop the unfinished line of what waits."""
        raise NotImplementedError

    def _drop_waiting(self) -> None:
        """Drop everything not on the wire (the channel is gone, or the pass is abandoned)."""
        raise NotImplementedError
