"""The cog's chat, whichever library the bot uses: its parts, its runtime once started, and
what its commands call.

The parts that need no database are built with the cog (the channels' configuration, the
request budget, the history's memory, the listener: `intake.py`); the rest opens once, on the
first message or when the bot connects (`runtime.py`), and closes with the cog. The
library-specific cog classes only forward their events and commands here. Each turn is the
core's (`tomori.turns.play`) on a `DiscordSurface`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable, Sequence
from typing import Any

from tomori.cast.personas import Persona
from tomori.cast.scenes import scene_accepted, scene_refused
from tomori.config.models import ModelChain
from tomori.config.settings import Settings, seconds
from tomori.delivery.notices import (
    KILL_CHANNEL_REQUIRED,
    KILL_NOT_ALLOWED,
    KILL_NOTHING_TO_STOP,
    KILL_STOPPED,
    KILL_STOPPED_OWN,
    Notice,
)
from tomori.locks import Admission, ChannelLocks, Turn, TurnGuard, TurnStop
from tomori.memory.tools import memory_tools
from tomori.monitoring.exporter import exporter_for
from tomori.monitoring.why import (
    NO_RECORD_NOTICE,
    NOT_YOURS,
    Unaddressed,
    may_read,
    told,
    unaddressed,
)
from tomori.policy.limits import BotTurns, Refusal
from tomori.tools.mcp import mcp_tools_for
from tomori.tools.registry import CURRENT_TIME, ToolRegistry
from tomori.tools.switches import BotTools, ToolCatalog
from tomori.turns import Addressed, ChannelConfig, Stage, TurnRequest, play
from tomori.turns.commanded import scene_asked
from tomori.words import said
from tomori_cog.confirmations import Confirmations
from tomori_cog.discord_io import find_channel
from tomori_cog.intake import Intake
from tomori_cog.library import Library
from tomori_cog.listener.gate import AdmissionGate
from tomori_cog.listener.live_messages import LiveMessages
from tomori_cog.listener.proxies import Proxies
from tomori_cog.listener.reply_rule import ReplyRule
from tomori_cog.pacing import DiscordPacing
from tomori_cog.progress_marks import ProgressMarks
from tomori_cog.reading.history import HistoryReader
from tomori_cog.reading.memory import RecentMessages
from tomori_cog.reading.message_tool import message_lookup_tool
from tomori_cog.runtime import Runtime
from tomori_cog.stop_buttons import StopButtons
from tomori_cog.surface import DiscordParts, DiscordSurface
from tomori_cog.takes import AnswerTakes
from tomori_cog.webhooks import Webhooks

log = logging.getLogger(__name__)


class TomoriChat:
    """The cog's chat (see the module docstring)."""

    def __init__(self, bot: Any, library: Library, settings: Settings, chain: ModelChain) -> None:
        self.bot = bot
        self.library = library
        self._settings = settings
        self.config = ChannelConfig(settings, chain)
        self.exporter = exporter_for(settings, chain)
        """What `serving_metrics` serves of this cog, on a registry of its own (`NO_EXPORT`,
        which keeps nothing, if `TOMORI_METRICS_ADDR` is unset)."""
        self.pacing = DiscordPacing(self.exporter)
        self.webhooks = Webhooks(bot, library, self.pacing)
        builtin = (CURRENT_TIME, message_lookup_tool(bot, library), *memory_tools(settings))
        self.tools = ToolRegistry(tool for tool in builtin if tool.name in settings.tools)
        """Built-in tools and those the bot author registers."""
        mcp = mcp_tools_for(settings, os.environ)  # a bad file stops the cog loading here
        self._bot_tools = BotTools(self.tools, mcp)
        self.memory = RecentMessages(
            per_channel=2 * settings.history_limit, channels=settings.history_memory_channels
        )
        """The channels' recent messages as the gateway showed them; the cogs' listeners
        keep it honest (edits, deletes, reconnects)."""
        history = HistoryReader(
            bot, library, settings, self.memory, self.pacing, self.webhooks.is_ours
        )
        gate = AdmissionGate(library, settings, self.pacing)
        self.confirmations = Confirmations(library, self.pacing)
        """Tool calls waiting for their asker's press: the cogs' listener hands presses here."""
        self.takes = AnswerTakes(
            bot,
            library,
            self.pacing,
            self.memory,
            self.webhooks,
            self.config,
            settings.kill_policy,
            settings.max_takes,
            locks=self._locks,
            held=self.command_refusal,
            persona_of=self._persona_of,
            persona_posted=self._persona_posted,
        )
        """The last answers' takes: the cogs' listener hands presses of their buttons here."""
        self.stop_buttons = StopButtons(library, self.stop_turn)
        """Each answer's Stop button: the cogs' listener hands presses here."""
        self.marks = ProgressMarks(bot, library, self.pacing, self._locks)
        """The triggers showing their progress as the bot's reactions."""
        self._parts = DiscordParts(
            bot,
            library,
            settings,
            self.pacing,
            self.config,
            gate,
            history,
            self.memory,
            self.webhooks,
            LiveMessages(seconds(settings.queue_max_age_ms)),
            self.confirmations,
            self.takes,
            self.stop_buttons,
            self.marks,
            self.exporter,
        )
        self._drawn_in = BotTurns.capped_at(settings.max_bot_turns)
        """Personas drawn in by another's answer, per channel since a human last spoke."""
        self.proxies: Proxies[TurnRequest] = Proxies(bot, library, settings)
        """Proxied members' messages: the originals waiting out their grace, the reposts."""
        self._reply_rule = reply_rule = ReplyRule(
            bot,
            library,
            settings,
            self.config,
            self.ensure_started,
            lambda: None if self._runtime is None else self._runtime.personas,
            self.webhooks.is_ours,
        )
        self.intake = Intake(
            self._parts,
            reply_rule=reply_rule,
            proxies=self.proxies,
            drawn_in=self._drawn_in,
            locks=self._locks,
            why=lambda: None if self._runtime is None else self._runtime.why,
        )
        self._runtime: Runtime | None = None
        self._start_lock = asyncio.Lock()
        self._closed = False

    # -- life cycle ---------------------------------------------------------------------------

    @property
    def runtime(self) -> Runtime:
        """What the started cog runs with; `RuntimeError` before it started or once closed."""
        if self._runtime is None:
            raise RuntimeError("the tomori cog is not started")
        return self._runtime

    @property
    def started(self) -> bool:
        return self._runtime is not None

    async def ensure_started(self) -> Runtime:
        """Open the database, migrate, build the providers, recover locks; once."""
        async with self._start_lock:
            if self._runtime is None:
                if self._closed:
                    raise RuntimeError("the tomori cog was unloaded")
                self._runtime = await Runtime.open(
                    self._parts,
                    self._bot_tools,
                    self._drawn_in,
                    self._run_turn,
                    self.intake.tell_expired,
                    self.intake.tell_cleared,
                )
            return self._runtime

    def messages_deleted(self, channel_id: int, message_ids: Iterable[int]) -> None:
        """Messages were deleted: the channel's summary that covered one is dropped."""
        runtime = self._runtime
        if runtime is not None and runtime.summaries is not None:
            runtime.summaries.messages_deleted(str(channel_id), [str(i) for i in message_ids])

    async def _locks(self) -> ChannelLocks:
        return (await self.ensure_started()).locks

    async def close(self) -> None:
        """Stop every turn, release its lock, close the providers and the database."""
        async with self._start_lock:
            self._closed = True
            self.proxies.close()
            await self.takes.close()
            self.marks.close()
            if self._runtime is not None:  # forgotten only once closed: a close cut short by
                await self._runtime.aclose()  # its caller's deadline is finished by the next
                self._runtime = None
            await self.stop_buttons.close()  # the stopped turns' buttons stay: they say so

    async def wait_idle(self, channel_id: int) -> None:
        """Wait until the channel's running and queued turns are done, and their triggers
        show how they ended (for tests and tools)."""
        if self._runtime is not None:
            await self._runtime.locks.wait_idle(str(channel_id))
        await self.marks.settled(channel_id)

    # -- a turn -------------------------------------------------------------------------------

    async def _run_turn(self, stage: Stage, turn: Turn, guard: TurnGuard) -> None:
        """Play the turn in its channel (`tomori.turns.play`), if the channel is still there."""
        self.pacing.watch(self.bot, self.library)  # a new session after a new login
        channel = await find_channel(self.bot, self.library, int(turn.channel_id))
        if channel is None:
            log.warning("skipping turn %s: its channel is gone", turn.turn_id)
            return
        surface = DiscordSurface(self._parts, stage.metrics, channel, turn)
        answered = None
        try:
            if await self.takes.before_turn(turn, channel):  # else a new take given up
                answered = await play(stage, surface, turn, guard)
        finally:
            buttoned = None
            try:
                buttoned = await self.takes.after_turn(turn, channel, answered)
            finally:  # the take buttons' edit takes the Stop button off the message they go on
                surface.release(buttoned)

    async def _persona_of(self, guild_id: str, key: str) -> Persona | None:
        personas = await (await self.ensure_started()).personas.of_server(guild_id)
        return next((persona for persona in personas if persona.key == key), None)

    async def _persona_posted(
        self, guild_id: str, channel_id: str, persona: Persona, message_ids: Sequence[str]
    ) -> None:
        personas = (await self.ensure_started()).personas
        await personas.posted(guild_id, channel_id, persona, message_ids)

    @property
    def bot_name(self) -> str:
        """The name the bot shows: its user's (the extension's own name before it logs in)."""
        user = self._parts.bot.user
        return str(user.display_name) if user is not None else "Tomori"

    def tool_catalog(self, guild_id: str) -> ToolCatalog:
        """What `/tomori tools` lists in server `guild_id`: every tool the bot could offer
        there, and its MCP servers."""
        return self._bot_tools.catalog(guild_id)

    # -- scenes -------------------------------------------------------------------------------

    async def start_scene(
        self,
        guild_id: int | None,
        channel_id: int | None,
        user_id: int,
        request: tuple[str, int, str | None],
        interaction_id: int,
    ) -> Notice:
        """Queue a scene as the channel's next turn (`/scene`): `request` is its personas,
        cycles and instructions. The notice, for whoever asked, says whether it begins now,
        waits for the channel, or why it does not run (the member's cooldown and daily tokens
        hold for it as for a message, and its tokens count as theirs)."""
        if guild_id is None or channel_id is None:
            return scene_refused(said("scene.servers_only"))
        runtime = await self.ensure_started()
        where = (str(guild_id), str(channel_id))
        asked = await scene_asked(self.config, runtime.personas, where, *request)
        if isinstance(asked, Notice):
            return asked
        held = await self.command_held(guild_id, user_id, interaction_id)
        if held is not None:
            return held
        queued = TurnRequest(Addressed.DIRECTLY, scene=asked.scene)
        admission = await runtime.locks.submit(queued.trigger(str(channel_id), None, str(user_id)))
        log.info("/scene in channel %s by %s: %s", channel_id, user_id, admission)
        if admission is Admission.IGNORED:
            return scene_refused(said("scene.still_stopping"))
        if admission is Admission.FAILED:
            return scene_refused(said("scene.not_queued"))
        if admission is Admission.QUEUE_FULL:
            return scene_refused(said("scene.queue_full"))
        return scene_accepted(asked.scene, asked.names, queued=admission is Admission.QUEUED)

    async def command_held(self, guild_id: int, user_id: int, interaction_id: int) -> Notice | None:
        """Why a command that starts a turn (`/scene`, `/respond`) does not run now: the
        member's cooldown and daily tokens, and the server's budget, hold for it as for a
        message, whoever may run it (its tokens count as theirs); None if it may."""
        refusal = await self.command_refusal(guild_id, user_id, interaction_id)
        return None if refusal is None else refusal.notice

    async def command_refusal(
        self, guild_id: int, user_id: int, interaction_id: int
    ) -> Refusal | None:
        """`command_held`'s limit, for a caller that words it itself (a moderator's press of
        Regenerate is held by its asker's limit: `tomori.turns.takes.held`)."""
        limits = await self.config.user_limits(guild_id)
        return await self._parts.gate.command_refusal(
            guild_id, user_id, str(interaction_id), limits
        )

    # -- "Why no answer?" ---------------------------------------------------------------------

    async def why(self, message: Any, presser_id: int, can_manage_messages: bool) -> Notice:
        """What became of `message`, for its sender (or the member a proxy reposted it for) or
        whoever may stop any answer there (`/kill`'s rule); anyone else is refused. A message
        with no account kept is judged by the reply rule again: not addressed (why), or no
        record (the bot did not see it, or it is older than a day)."""
        account = await (await self.ensure_started()).why.account(str(message.id))
        askers = frozenset() if account is None else account.askers
        presser, sender = str(presser_id), str(message.author.id)
        policy = self._settings.kill_policy
        if not may_read(presser, sender, askers, can_manage_messages, policy):
            return NOT_YOURS
        if account is not None:
            return told(account.steps)
        judged = await self._reply_rule.judged(message)
        return unaddressed(judged) if isinstance(judged, Unaddressed) else NO_RECORD_NOTICE

    # -- /kill --------------------------------------------------------------------------------

    async def kill(self, channel_id: int | None, user_id: int, can_manage_messages: bool) -> Notice:
        """Stop the channel's stream and clear its queue (a moderator, or anyone under the
        `anyone` policy), or stop the answer to its user and clear only their queued
        messages (anyone else); the notice says what happened."""
        if channel_id is None:
            return KILL_CHANNEL_REQUIRED
        locks = (await self.ensure_started()).locks
        channel, user = str(channel_id), str(user_id)
        if self._settings.kill_policy.stops_any(can_manage_messages):
            outcome = await locks.kill(channel, requester_id=user)
            return KILL_NOTHING_TO_STOP if outcome.nothing_to_stop else KILL_STOPPED
        outcome = await locks.kill_own(channel, user)
        if not outcome.nothing_to_stop:
            return KILL_STOPPED_OWN
        requester = await locks.requester_of(channel)  # only to say why nothing stopped
        return KILL_NOT_ALLOWED if requester not in (None, user) else KILL_NOTHING_TO_STOP

    async def stop_turn(
        self, channel_id: str, turn_id: str, user_id: str, can_manage_messages: bool
    ) -> TurnStop:
        """A press of turn `turn_id`'s Stop button (`tomori_cog.stop_buttons`): that turn
        stops, as for /kill, if it still runs and the presser may stop it (its asker, or whom
        /kill's policy lets stop any answer)."""
        locks = (await self.ensure_started()).locks
        any_turn = self._settings.kill_policy.stops_any(can_manage_messages)
        return await locks.stop_turn(channel_id, turn_id, user_id, any_turn=any_turn)
