"""The console's channel as a turn sees it: its `tomori.turns.Surface`.

The turn is the core's (`tomori.turns.play`), the very one a Discord channel runs; this
answers its questions about the terminal's one channel: the trigger is a numbered message
there, the limits are the console server's, the history is the channel's own messages (and
what fell out of its window, for the channel's summary), and each persona's messages print
under its name.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from tomori.cast.personas import Persona
from tomori.cast.sprites import wardrobe
from tomori.config.settings import Settings
from tomori.console import history
from tomori.console.channel import ConsoleChannel
from tomori.console.history import USER_NAME, ConsoleMessage
from tomori.console.server import BOT, CHANNEL, SERVER, USER, ConsoleServer, Held
from tomori.delivery.port import ChannelPort, Urgency
from tomori.delivery.progress import NO_PROGRESS, ProgressHook, Stage
from tomori.delivery.sprite_markers import sprite_name
from tomori.generation.state import TurnState
from tomori.locks import Turn, TurnGuard
from tomori.prompt.conversation import spoken
from tomori.summary import Said
from tomori.tools.confirmation import ToolAsk, Verdict, before_asking
from tomori.turns.summaries import Earlier
from tomori.turns.surface import Context, Reading, Speaker, Voice
from tomori.words import say


def tell_held(channel: ConsoleChannel, held: Held, message_id: str) -> None:
    """A message over the limits: the notice Discord posts, or (where Discord says nothing,
    having said it once) a line saying why nothing answers."""
    if held.notice is not None:
        channel.tell(held.notice, reply_to=message_id)
    else:
        channel.say(f"(#{message_id} is not answered: over the {held.refusal.limit})")


@dataclass(frozen=True, slots=True, eq=False)
class ConsoleReading:
    """What a turn read of the console's channel: where it stood, and what was left out."""

    channel: ConsoleChannel
    trigger: ConsoleMessage | None
    waiting: Collection[str]
    settings: Settings
    until: int
    """The number the channel's next message took as the turn read it."""

    @property
    def notices(self) -> Context:
        return ()  # the console's messages carry no files

    def posted_by_us(self) -> Sequence[str]:
        return ()  # the console knows each of its messages' speakers by name

    def context(self, system_prompt: str, voice: Voice) -> Context:
        name = None if voice.persona is None else voice.names.get(voice.persona)
        return self.channel.context(
            self.trigger, self.waiting, self.settings, system_prompt, name, self.until
        )

    def quoted(self, message_id: str) -> str | None:
        shown = self.channel.shown(self.trigger, self.waiting, self.settings, self.until)
        items = history.context([m for m in shown if str(m.id) == message_id], "", None)[1:]
        return items[0].text if items else None

    def fallen_out(self) -> Earlier | None:
        """What fell out of the window: the messages before its oldest, as the cog reads a
        channel's (`tomori_cog.reading.fallen_out`); None when the window held them all."""
        older = self.channel.before(self.until if self.trigger is None else self.trigger.id)
        window = self.settings.history_limit
        if len(older) <= window:
            return None
        out = older[: len(older) - window]

        async def earlier(after: str | None, limit: int) -> Sequence[Said]:
            if after is None:  # the first fold: the window's worth just before it
                read = out[-limit:]
            else:
                read = [message for message in out if message.id > int(after)][:limit]
            return [_said(message) for message in read if message.text.strip()]

        return earlier


def _said(message: ConsoleMessage) -> Said:
    """A message of the console's as the summarizing model is shown it, and whose it is: the
    person at the terminal's (their `/memory forget-all` drops what covered it), or the bot's."""
    if not message.from_bot:
        return Said(str(message.id), USER, spoken(USER_NAME, message.text))
    return Said(str(message.id), BOT, spoken(message.speaker or BOT, message.text))


YES = frozenset({"yes", "y", "allow"})
NO = frozenset({"no", "n", "refuse"})
"""The lines that answer a tool call waiting for confirmation (any other is a message)."""


class ConsoleSurface:
    """The console's one channel (see the module docstring)."""

    def __init__(
        self,
        channel: ConsoleChannel,
        server: ConsoleServer,
        settings: Settings,
        *,
        draft: Callable[[], str] | None = None,
    ) -> None:
        """`draft`: live, what is typed at the prompt (None: piped, where nobody can be asked
        to confirm a tool call, since the script's lines do not wait for the question)."""
        self._channel = channel
        self._server = server
        self._settings = settings
        self._draft = draft
        self.notices = channel
        self._confirming: tuple[ToolAsk, asyncio.Future[Verdict]] | None = None

    @property
    def channel_id(self) -> str:
        return CHANNEL

    @property
    def guild_id(self) -> str:
        return SERVER

    @property
    def limit_scope(self) -> str:
        return SERVER

    @property
    def shared(self) -> bool:
        return True  # its one member, you

    async def trigger(self, turn: Turn) -> ConsoleMessage | None:
        return self._channel.message(turn.trigger.message_id)

    async def latest(self) -> ConsoleMessage | None:
        return self._channel.latest()

    async def may_start(
        self, turn: Turn, message: Any, guard: TurnGuard, *, surface_errors: bool
    ) -> bool:
        held = await self._server.may_start()
        if held is None:
            return True
        tell_held(self._channel, held, self._channel.message_id(message))
        return False

    def deliverable(self) -> bool:
        return True  # the terminal takes every message

    def refused(self) -> None:
        pass  # the terminal refuses nothing

    @asynccontextmanager
    async def typing(self, state: TurnState) -> AsyncIterator[None]:
        yield  # the channel shows "typing" itself from the turn's start (`begin_turn`)

    async def read(
        self,
        message: Any | None,
        waiting: Collection[str],
        *,
        queued: bool,
        images: bool,
        before: str | None = None,
    ) -> Reading:
        """`before` bounds a new take's reading: the console has no takes."""
        channel = self._channel
        return ConsoleReading(channel, message, waiting, self._settings, channel.next_number)

    async def confirm(self, ask: ToolAsk) -> Verdict:
        """Ask at the terminal: the question prints at once, and the next line that says yes
        or no (`answered`) answers it."""
        verdict = before_asking(ask, SERVER, ())
        if verdict is not Verdict.ALLOWED:
            return verdict
        if self._draft is None:
            return Verdict.NOBODY_TO_ASK
        answer: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._confirming = (ask, answer)
        question = say(ask.prompt("you")) + "\n(type yes to allow it, or no)"
        self._channel.ask(question, self._draft())
        try:
            async with asyncio.timeout(ask.timeout_s):
                return await asyncio.shield(answer)
        except TimeoutError:
            self._channel.interject(say(ask.settled(Verdict.TIMED_OUT, "you")))
            return Verdict.TIMED_OUT
        finally:
            self._confirming = None

    def answered(self, line: str) -> bool:
        """Whether `line` answered a tool call waiting for confirmation (it is no message)."""
        if self._confirming is None:
            return False
        word = line.strip().lower()
        if word not in YES | NO:
            return False
        ask, answer = self._confirming
        verdict = Verdict.ALLOWED if word in YES else Verdict.REFUSED
        if not answer.done():
            answer.set_result(verdict)
        self._channel.interject(say(ask.settled(verdict, "you")))
        return True

    def progress(
        self, message_id: str, visible: frozenset[Stage], *, from_queue: bool
    ) -> ProgressHook:
        """The terminal has no reactions: its answers show the progress themselves."""
        return NO_PROGRESS

    def bot_port(self) -> ChannelPort:
        return self._channel

    def speaker(self, persona: Persona) -> Speaker:
        port = PersonaChannel(self._channel, persona.name)
        return Speaker(port, wardrobe(persona.name, persona.sprites, port.wear))


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
