"""An answer's Stop button: on the first message of each answer while it runs, and its press.

Each answer (the bot's, or a persona's through the bot's own webhook, whose messages Discord
lets carry buttons because the application made it) carries a Stop button on its first
message: the create that shows its first text carries it (for a new take, written into the
answer's messages, the edit that shows its first text), so it costs no request of its own.
Its custom id names the turn (`tomori:stop:<turn id>`), not anything this process holds: a
press reaching any process of the bot, after a restart too, is judged against the lock row of
the press's channel (`ChannelLocks.stop_turn`), which names the turn running there. It stops
that turn alone, as /kill would (the provider's stream closed, a running tool cancelled, what
was posted stays; the queue stays too), for its asker or a member /kill lets stop any answer;
anyone else is told why not, ephemerally. The press is answered within Discord's 3 s: the
button goes with the reply (an update of the message), or the reply is deferred when the
database is slow.

When the answer ends (the next persona speaks, or the turn is over) its button is taken away
by an edit that waits behind every other request of the bot and never takes a text's place in
its channel's bucket (`DiscordPacing.tidy`), unless the answer's take buttons go on that same
message (`tomori_cog.takes`): their edit replaces the Stop button, one edit for both. A press
on a button still shown after its turn ended (the edit not made yet, or its process gone) is
told so, and the reply takes it away; a press on one a client still shows once it is gone (a
double click, a stale client) is told so alone. Either way the message's other buttons (the
answer's take buttons) stay: an edit carries the components whole.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from tomori.locks import TurnStop
from tomori.locks.settling import settle
from tomori.words import said, say
from tomori_cog.discord_io import call_failures
from tomori_cog.library import Library
from tomori_cog.locales import of_interaction
from tomori_cog.pacing import TIDY_WITHIN_S

log = logging.getLogger(__name__)

CUSTOM_ID_PREFIX = "tomori:stop:"
"""The start of a Stop button's custom id: `tomori:stop:<turn id>`."""
ANSWER_WITHIN_S = 2.0
"""How long a press waits for its outcome before its reply is deferred (Discord drops an
interaction not answered within 3 s)."""
MOST_REMEMBERED = 1_000
"""Messages whose button a press took away, remembered so their answer's end does not edit
them again."""


def custom_id(turn_id: str) -> str:
    return f"{CUSTOM_ID_PREFIX}{turn_id}"


class Buttoned(Protocol):
    """A port that posted a message carrying a Stop button, and can take the button away."""

    async def unbutton(self, message_id: str) -> None:
        """Wait for room (`DiscordPacing.tidy`), then take the message's buttons away (asked
        once more if Discord answered 5xx or not at all)."""
        ...


Stopper = Callable[[str, str, str, bool], Awaitable[TurnStop]]
"""Stops a turn for a press: (channel, turn, presser, whether they have Manage Messages)."""


class AnswerButton:
    """One answer's Stop button: on the first message any port of the answer sends (a
    persona's webhook, or the bot's identity it falls back to), until the answer ends."""

    def __init__(self, buttons: StopButtons, view: Any) -> None:
        self._buttons = buttons
        self._view = view
        self._shown: tuple[Buttoned, str] | None = None
        self._ended = False

    def wanted(self) -> Any | None:
        """The view a send carries: the button, until a message shows it or the answer ended."""
        return None if self._shown is not None or self._ended else self._view

    def posted(self, port: Buttoned, message_id: str) -> None:
        """`port` posted `message_id` with the button."""
        if self._shown is None:
            self._shown = (port, message_id)
            if self._ended:  # posted as the answer ended
                self._buttons.tidy(port, message_id)

    def end(self, handed_over: str | None = None) -> None:
        """The answer ended: its button goes (in a task of its own), unless the message that
        shows it is `handed_over`, whose next edit (its take buttons) replaces it."""
        if not self._ended:
            self._ended = True
            if self._shown is not None and self._shown[1] != handed_over:
                self._buttons.tidy(*self._shown)


class TurnButtons:
    """The Stop buttons of one turn's answers, one at a time: a new answer ends the last."""

    def __init__(self, buttons: StopButtons, library: Library, turn_id: str, locale: str) -> None:
        self._buttons = buttons
        label = say(said("button.stop"), locale)
        self._view = library.buttons((label, custom_id(turn_id), "danger"))
        self._current: AnswerButton | None = None

    def next_answer(self) -> AnswerButton:
        self.end()
        self._current = AnswerButton(self._buttons, self._view)
        return self._current

    def end(self, handed_over: str | None = None) -> None:
        """The last answer ended (`AnswerButton.end`)."""
        if self._current is not None:
            self._current.end(handed_over)


class StopButtons:
    """The cog's Stop buttons: the presses of every answer's, and their tidy-ups."""

    def __init__(self, library: Library, stop: Stopper) -> None:
        self._library = library
        self._stop = stop
        self._tidying: set[asyncio.Task[None]] = set()
        self._closed = False
        self._unbuttoned: OrderedDict[str, None] = OrderedDict()

    def for_turn(self, turn_id: str, locale: str) -> TurnButtons:
        """The buttons of turn `turn_id`'s answers, labelled in `locale` (the server's)."""
        return TurnButtons(self, self._library, turn_id, locale)

    # -- taking an ended answer's button away -----------------------------------------------

    def tidy(self, port: Buttoned, message_id: str) -> None:
        if self._closed:
            return
        task = asyncio.create_task(self._tidy(port, message_id))
        self._tidying.add(task)
        task.add_done_callback(self._tidying.discard)

    async def _tidy(self, port: Buttoned, message_id: str) -> None:
        if message_id in self._unbuttoned:
            return
        failures: tuple[type[BaseException], ...] = (TimeoutError, *call_failures(self._library))
        try:
            async with asyncio.timeout(TIDY_WITHIN_S):
                await port.unbutton(message_id)
        except failures as error:
            log.info("message %s keeps its Stop button: %r", message_id, error)

    async def settled(self) -> None:
        """Wait until every ended answer's button this process was told of is taken away
        (or left, past `TIDY_WITHIN_S`): for tests, which `wait_idle` does not hold up."""
        await settle(lambda: self._tidying)

    async def close(self) -> None:
        """Stop tidying: a button left shown says its answer ended when pressed."""
        self._closed = True
        for task in list(self._tidying):
            task.cancel()
        await asyncio.gather(*self._tidying, return_exceptions=True)

    # -- a press ----------------------------------------------------------------------------

    async def pressed(self, interaction: Any) -> bool:
        """Answer a press of a Stop button; False: the interaction is not one."""
        data = getattr(interaction, "data", None) or {}
        pressed_id = str(data.get("custom_id") or "")
        if not pressed_id.startswith(CUSTOM_ID_PREFIX):
            return False
        turn_id = pressed_id.removeprefix(CUSTOM_ID_PREFIX)
        work = asyncio.ensure_future(self._outcome(interaction, turn_id))
        try:
            done, _ = await asyncio.wait({work}, timeout=ANSWER_WITHIN_S)
            if work in done:
                await self._reply(interaction, work.result())
            else:
                await interaction.response.defer()  # for a press: its message unchanged
                await self._follow_up(interaction, await work)
        except call_failures(self._library) as error:
            log.warning("a press of a Stop button could not be answered: %s", error)
        finally:
            if not work.done():
                work.cancel()
            await asyncio.gather(work, return_exceptions=True)
        return True

    async def _outcome(self, interaction: Any, turn_id: str) -> TurnStop:
        channel_id = interaction.channel_id
        if channel_id is None:
            return TurnStop.ENDED
        can_manage = bool(getattr(interaction.permissions, "manage_messages", False))
        try:
            return await self._stop(str(channel_id), turn_id, str(interaction.user.id), can_manage)
        except Exception:
            log.exception("a Stop press failed in channel %s", channel_id)
            return TurnStop.FAILED

    async def _reply(self, interaction: Any, outcome: TurnStop) -> None:
        """The press's reply: when the turn stopped or had ended, an update taking the Stop
        button away if the message still shows it (its other buttons, an answer's take
        buttons, stay), and the presser told if it had ended; else a refusal only they see.
        Only the button pressed goes: a stale client's press of an earlier turn's Stop on a
        message now showing a regeneration's leaves that one, which stops the new take."""
        if outcome not in (TurnStop.STOPPED, TurnStop.ENDED):
            await interaction.response.send_message(_told(outcome, interaction), ephemeral=True)
            return
        message = getattr(interaction, "message", None)
        pressed_id = str((getattr(interaction, "data", None) or {}).get("custom_id") or "")
        if message is not None and _shows(message, pressed_id):
            await interaction.response.edit_message(view=self._rest(message, pressed_id))
            self._remember_unbuttoned(str(message.id))
            if outcome is TurnStop.ENDED:
                await interaction.followup.send(_told(outcome, interaction), ephemeral=True)
        elif outcome is TurnStop.ENDED:  # its button gone already: a double click, a stale client
            await interaction.response.send_message(_told(outcome, interaction), ephemeral=True)
        else:
            await interaction.response.defer()  # nothing to take away: its message unchanged

    def _rest(self, message: Any, pressed_id: str) -> Any | None:
        """The buttons `message` keeps once the Stop button pressed goes."""
        return self._library.buttons_but(message, pressed_id)

    async def _follow_up(self, interaction: Any, outcome: TurnStop) -> None:
        """After a deferred reply: the presser is told what did not stop (a stopped turn's
        button goes when it ends)."""
        if outcome is not TurnStop.STOPPED:
            await interaction.followup.send(_told(outcome, interaction), ephemeral=True)

    def _remember_unbuttoned(self, message_id: str) -> None:
        self._unbuttoned[message_id] = None
        while len(self._unbuttoned) > MOST_REMEMBERED:
            self._unbuttoned.popitem(last=False)


def _shows(message: Any, pressed_id: str) -> bool:
    """Whether `message` (as Discord sent it with the press) shows the Stop button pressed."""
    return pressed_id.startswith(CUSTOM_ID_PREFIX) and any(
        getattr(button, "custom_id", None) == pressed_id
        for row in getattr(message, "components", ())
        for button in getattr(row, "children", ())
    )


def _told(outcome: TurnStop, interaction: Any) -> str:
    """What a press that stopped nothing is told, ephemerally, in the presser's language."""
    key = {TurnStop.NOT_YOURS: "not_yours", TurnStop.ENDED: "ended"}.get(outcome, "failed")
    return say(said(f"reply.stop.{key}"), of_interaction(interaction))
