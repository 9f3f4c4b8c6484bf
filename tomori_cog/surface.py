"""A Discord channel as a turn sees it: the cog's `tomori.turns.Surface`.

The turn itself is the core's (`tomori.turns.play`); this answers its questions about one
channel of the bot's library: the trigger (kept from the gateway, else fetched), the limits
the asker is held to as the turn starts, typing, one read of the history, the ports the bot and
each persona post through (a persona's through the channel's webhook), and the trigger's
progress marks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Collection, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from tomori.cast.personas import Persona
from tomori.config.settings import Settings, seconds
from tomori.delivery.port import ChannelPort
from tomori.delivery.progress import ProgressHook, Stage
from tomori.generation.state import TurnState
from tomori.generation.stoppable import until_stopped
from tomori.locks import Turn, TurnGuard
from tomori.monitoring.exporter import Exporter
from tomori.monitoring.metrics import Metrics
from tomori.tools.confirmation import ToolAsk, Verdict
from tomori.turns.config import ChannelConfig
from tomori.turns.request import TurnRequest
from tomori.turns.summaries import Earlier
from tomori.turns.surface import BOT_VOICE, Context, Reading, Speaker, Voice
from tomori_cog.confirmations import Confirmations
from tomori_cog.discord_io import EmbedNotices, LibraryPort, call_failures, keep_typing
from tomori_cog.library import Library
from tomori_cog.listener.gate import AdmissionGate, guild_id_of, limit_scope
from tomori_cog.listener.live_messages import LiveMessages
from tomori_cog.locales import of_channel
from tomori_cog.pacing import DiscordPacing
from tomori_cog.persona_port import PersonaPort, wardrobe_of
from tomori_cog.progress_marks import ProgressMarks
from tomori_cog.reading.audience import everyone_reads
from tomori_cog.reading.fallen_out import fallen_out
from tomori_cog.reading.history import HistoryReader
from tomori_cog.reading.memory import RecentMessages
from tomori_cog.reading.model_view import Shown
from tomori_cog.stop_buttons import AnswerButton, StopButtons
from tomori_cog.takes import AnswerTakes
from tomori_cog.webhooks import Webhooks

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, eq=False)
class DiscordParts:
    """What every channel's surface shares: the bot, its library, and the cog's parts that
    need no database (built with the cog; those that do are opened on them at start-up)."""

    bot: Any
    library: Library
    settings: Settings
    pacing: DiscordPacing
    config: ChannelConfig
    gate: AdmissionGate
    history: HistoryReader
    memory: RecentMessages
    webhooks: Webhooks
    live_messages: LiveMessages
    confirmations: Confirmations
    takes: AnswerTakes
    stop_buttons: StopButtons
    marks: ProgressMarks
    exporter: Exporter
    """Where the runtime reports what an operator's monitoring reads (`TOMORI_METRICS_ADDR`)."""


@dataclass(frozen=True, slots=True, eq=False)
class ChannelReading:
    """What a turn read of a Discord channel (`tomori.turns.Reading`)."""

    shown: Shown
    history: HistoryReader
    me: Any
    earlier: Earlier | None = None
    """How to read what fell out of the window (None: nothing did)."""

    @property
    def notices(self) -> Context:
        return self.shown.notices

    def posted_by_us(self) -> Sequence[str]:
        me = self.me
        return [
            str(m.id)
            for m in self.shown.messages
            if m.webhook_id or (me is not None and m.author.id == me.id)
        ]

    def context(self, system_prompt: str, voice: Voice) -> Context:
        return self.history.view.context(self.shown, system_prompt, voice)

    def quoted(self, message_id: str) -> str | None:
        lines = self.history.view.lines(self.shown, BOT_VOICE)
        return next((item.text for shown_id, item in lines if shown_id == message_id), None)

    def fallen_out(self) -> Earlier | None:
        return self.earlier


class DiscordSurface:
    """One Discord channel, for one turn (see the module docstring)."""

    def __init__(self, parts: DiscordParts, metrics: Metrics, channel: Any, turn: Turn) -> None:
        self._parts = parts
        self._metrics = metrics
        self._channel = channel
        self._buttons = parts.stop_buttons.for_turn(turn.turn_id, of_channel(channel))
        """Each answer's Stop button: a new answer (a port asked for) ends the last's."""
        self._guild = getattr(channel, "guild", None)
        self.notices = EmbedNotices(parts.library, channel, parts.pacing)
        self._involved: frozenset[int] = frozenset()
        """The people the turn read (who wrote what it was shown, and whom the trigger
        named): the only users its answers may ping."""
        self._images = parts.history.hold_images()
        """The image bytes the turn's reading holds, until `release`."""

    @property
    def channel_id(self) -> str:
        return str(self._channel.id)

    @property
    def guild_id(self) -> str | None:
        return None if self._guild is None else str(self._guild.id)

    @property
    def limit_scope(self) -> str:
        return limit_scope(self._guild)

    @property
    def shared(self) -> bool:
        return everyone_reads(self._parts.library, self._channel)

    async def trigger(self, turn: Turn) -> Any | None:
        """The trigger as the gateway showed it, else read again (a turn replayed after a
        restart); None if it was deleted or can no longer be read."""
        message_id = turn.trigger.message_id or ""
        live = self._parts.live_messages.take(message_id)
        if live is not None:
            return live
        lib = self._parts.library.module
        try:
            return await self._channel.fetch_message(int(message_id))
        except (lib.NotFound, lib.Forbidden, ValueError):
            return None

    async def latest(self) -> Any | None:
        """The channel's newest message, where a `/respond` turn's history ends (None: the
        channel has none, or it cannot be read: the turn answers what the asker said alone)."""
        channel = self._channel
        try:
            await self._parts.pacing.read()
            async for message in channel.history(limit=1):
                return message
        except call_failures(self._parts.library) as error:
            log.info("channel %s: its latest message cannot be read: %r", channel.id, error)
        return None

    async def may_start(
        self, turn: Turn, message: Any, guard: TurnGuard, *, surface_errors: bool
    ) -> bool:
        parts = self._parts
        limits = await parts.config.user_limits(guild_id_of(message))
        if limits.counts_tokens:  # the turn before this one recorded its tokens: count them
            await until_stopped(guard, self._metrics.flushed())
        requester = turn.trigger.requester_id or str(message.author.id)
        retake = TurnRequest.of(turn.trigger).take is not None
        return await parts.gate.may_start(
            self._channel, message, requester, surface_errors, limits, retake=retake
        )

    def deliverable(self) -> bool:
        return self._parts.gate.deliverability.allows(self._channel)

    def refused(self) -> None:
        self._parts.gate.deliverability.refused(self._channel.id)

    @asynccontextmanager
    async def typing(self, state: TurnState) -> AsyncIterator[None]:
        """Typing in the channel until the turn shows something, or ends."""
        parts = self._parts
        interval_s = seconds(parts.settings.typing_keepalive_interval_ms)
        task = asyncio.create_task(
            keep_typing(
                parts.library,
                self._channel,
                interval_s,
                parts.pacing,
                shown=lambda: bool(state.delivered),
            )
        )
        try:
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def read(
        self,
        message: Any | None,
        waiting: Collection[str],
        *,
        queued: bool,
        images: bool,
        before: str | None = None,
    ) -> Reading:
        history = self._parts.history
        if message is None:
            shown = await history.read_latest(
                self._channel, waiting, images=images, hold=self._images
            )
        else:
            shown = await history.read(
                self._channel,
                message,
                waiting,
                queued=queued,
                before=before,
                images=images,
                hold=self._images,
            )
        self._involved = involved_in(shown.messages, message)
        parts = self._parts
        window = parts.settings.history_limit
        earlier = fallen_out(parts.library, parts.pacing, self._channel, shown, message, window)
        return ChannelReading(shown, history, parts.bot.user, earlier)

    async def confirm(self, ask: ToolAsk) -> Verdict:
        return await self._parts.confirmations.ask(self._channel, ask)

    def release(self, handed_over: str | None = None) -> None:
        """The turn is over: give back the image bytes its reading held, and take its last
        answer's Stop button away, unless it is on message `handed_over`, whose take buttons
        replace it (`tomori_cog.takes`)."""
        self._images.release()
        self._buttons.end(handed_over)

    def progress(
        self, message_id: str, visible: frozenset[Stage], *, from_queue: bool
    ) -> ProgressHook:
        return self._parts.marks.progress(self._channel, message_id, visible, from_queue=from_queue)

    def bot_port(self) -> ChannelPort:
        return self._library_port(self._buttons.next_answer())

    def _library_port(self, button: AnswerButton) -> LibraryPort:
        parts = self._parts
        channel, involved = self._channel, self._involved
        return LibraryPort(parts.library, channel, parts.pacing, parts.memory, involved, button)

    def speaker(self, persona: Persona) -> Speaker:
        parts = self._parts
        button = self._buttons.next_answer()
        port = PersonaPort(
            parts.library,
            self._channel,
            parts.pacing,
            parts.webhooks,
            persona,
            self._library_port(button),
            parts.memory,
            self._involved,
            button,
        )
        return Speaker(port, wardrobe_of(persona, port))


def involved_in(shown: Iterable[Any], trigger: Any | None) -> frozenset[int]:
    """The people a turn's conversation involves: those who wrote what it was shown (bots and
    webhooks aside), and the users the trigger itself named."""
    people = {m.author.id for m in shown if not m.author.bot and not m.webhook_id}
    if trigger is not None:
        people |= {user.id for user in trigger.mentions if not user.bot}
    return frozenset(people)
