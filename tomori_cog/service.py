"""What the cog does, whichever library the bot uses.

The service owns the database, the channel locks and each channel's configuration (with the
providers). The library-specific cog classes only forward `on_message`, `/kill`, `/scene`,
`/tomori` and their life cycle to it. Messages arrive as the library's own objects; the
attributes read here (author, content, mentions, reference, attachments, history) are the same
in nextcord and discord.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tomori.config.models import ModelChain, ModelEntry
from tomori.config.parsers import ConfigError
from tomori.config.settings import KillPolicy, Settings, seconds
from tomori.console.probe import probe
from tomori.delivery.notices import (
    GENERATION_ERROR,
    KILL_CHANNEL_REQUIRED,
    KILL_NOT_ALLOWED,
    KILL_NOTHING_TO_STOP,
    KILL_STOPPED,
    NOT_ANSWERED,
    Notice,
    cooldown_notice,
    post_notice_safely,
    quota_notice,
)
from tomori.generation.answering import answer_turn
from tomori.generation.chain import ChainResult
from tomori.generation.mcp import McpTools, mcp_tools_for
from tomori.generation.results import StreamStatus, TurnOutcome
from tomori.generation.state import TurnState
from tomori.generation.stoppable import Stopped, until_stopped
from tomori.generation.tools import CURRENT_TIME, ToolRegistry
from tomori.locks import Admission, ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.policy.interruptions import follow_up_key, is_stop_word
from tomori.policy.limits import BotTurns, Limit, UserLimits
from tomori.policy.metrics import Metrics
from tomori.policy.model_health import ModelHealthStore
from tomori.policy.personas import Persona, PersonaStore, drawn_in, personas_by_key
from tomori.policy.scenes import (
    SCENE_DROPPED,
    SCENES_OFF,
    Scene,
    cast_scene,
    heard,
    scene_accepted,
    scene_refused,
    speaker_notice,
)
from tomori.policy.tool_switches import BotTools, Switch, ToolCatalog, ToolSwitchStore
from tomori.prompt.prefill import Prefill
from tomori.providers.base import ContextItem
from tomori.store import Database
from tomori.store.connect import open_database
from tomori.store.first_come import arrived
from tomori_cog.channel_config import ChannelConfig, TurnConfig
from tomori_cog.discord_io import EmbedNotices, LibraryPort, find_channel, keep_typing
from tomori_cog.library import Library
from tomori_cog.listener.gate import AdmissionGate, Asker, guild_id_of, limit_scope
from tomori_cog.listener.live_messages import LiveMessages
from tomori_cog.listener.proxies import Proxies
from tomori_cog.listener.reply_rule import Addressed, Asked, ReplyRule, personas_of
from tomori_cog.manual import Asking, Manual, latest_message
from tomori_cog.pacing import DiscordPacing
from tomori_cog.reading.attachments import TurnAttachments
from tomori_cog.reading.history import HistoryReader, Shown, Voice
from tomori_cog.reading.memory import RecentMessages
from tomori_cog.reading.message_tool import message_lookup_tool
from tomori_cog.webhooks import PersonaPort, Webhooks, wardrobe_of

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Spoken:
    """Who speaks next in a turn of personas, how it sees the channel, and what the personas
    before it said in the turn."""

    persona: Persona
    voice: Voice
    said: tuple[tuple[Persona, str], ...]


class TomoriService:
    def __init__(self, bot: Any, library: Library, settings: Settings, chain: ModelChain) -> None:
        self.bot = bot
        self._library = library
        self._settings = settings
        self.config = ChannelConfig(settings, chain)
        self.personas: PersonaStore | None = None
        self.pacing = DiscordPacing()
        self.webhooks = Webhooks(bot, library, self.pacing)
        self._reply_rule = ReplyRule(
            bot,
            library,
            settings,
            self.config,
            self.ensure_started,
            lambda: self.personas,
            self.webhooks.is_ours,
        )
        self._drawn_in = BotTurns.capped_at(settings.max_bot_turns)
        """Personas drawn in by another's answer, per channel since a human last spoke."""
        self._database: Database | None = None
        self._locks: ChannelLocks | None = None
        self.metrics: Metrics | None = None
        self.health: ModelHealthStore | None = None
        builtin = (CURRENT_TIME, message_lookup_tool(bot, library))
        self.tools = ToolRegistry(tool for tool in builtin if tool.name in settings.tools)
        self.mcp: McpTools | None = mcp_tools_for(settings, os.environ)
        """The MCP servers of `TOMORI_MCP_CONFIG` (a bad file stops the cog loading here);
        started with the database, closed after the last turn."""
        self._bot_tools = BotTools(self.tools, self.mcp)
        self.tool_switches: ToolSwitchStore | None = None
        self.memory = RecentMessages(
            per_channel=2 * settings.history_limit, channels=settings.history_memory_channels
        )
        """The channels' recent messages as the gateway showed them; the cogs' listeners
        keep it honest (edits, deletes, reconnects)."""
        self._history = HistoryReader(
            bot, library, settings, self.memory, self.pacing, self.webhooks.is_ours
        )
        self._gate = AdmissionGate(library, settings, self.pacing)
        self._live_messages = LiveMessages(seconds(settings.queue_max_age_ms))
        self.proxies: Proxies[Asked] = Proxies(bot, library, settings)
        """Proxied members' messages: the originals waiting out their grace, the reposts."""
        self._sharing: asyncio.Task[None] | None = None
        self._start_lock = asyncio.Lock()
        self._started = False
        self._closed = False

    # -- life cycle ---------------------------------------------------------------------------

    async def ensure_started(self) -> ChannelLocks:
        """Open the database, migrate, build the providers, recover locks; once."""
        async with self._start_lock:
            if self._locks is None:
                if self._closed:
                    raise RuntimeError("the tomori cog was unloaded")
                database = await open_database(self._settings)
                try:
                    locks = ChannelLocks(
                        lock_backend(database, self._settings),
                        self._settings,
                        self._run_turn,
                        self._tell_expired,
                    )
                    self.config.start(database)
                    self.personas = PersonaStore(database)
                    self.webhooks.open(database)
                    self._gate.open(database)
                    self._database, self._locks = database, locks
                    self.metrics = Metrics(database)
                    await locks.start()
                    self.pacing.watch(self.bot, self._library)
                    self._sharing = asyncio.create_task(
                        self.pacing.shared(locks.live_processes), name="tomori-request-share"
                    )
                    self.health = self._model_health(database, locks.instance_id)
                    self.tool_switches = ToolSwitchStore(database)
                    if self.mcp is not None:
                        self.mcp.start()
                except BaseException:
                    await self._release_resources()
                    raise
                log.info("tomori serving with %s", self.config.chain.described)
            return self._locks

    async def close(self) -> None:
        """Stop every turn, release its lock, close the providers and the database."""
        async with self._start_lock:
            self._closed = True
            self.proxies.close()
            await self._release_resources()

    async def _release_resources(self) -> None:
        # In this order: turns end (and release their locks) while providers and the
        # database are still open; each is forgotten only once it is closed.
        if self._locks is not None:
            await self._locks.close()
            self._locks = None
        if self._sharing is not None:
            self._sharing.cancel()
            await asyncio.gather(self._sharing, return_exceptions=True)
            self._sharing = None
        self.pacing.budget.close()
        if self.mcp is not None:  # no turn runs now: nothing waits on a server
            await self.mcp.aclose()
        self.tool_switches = None
        if self.health is not None:  # its probes use the providers
            await self.health.close()
            self.health = None
        await self.config.aclose()
        if self.metrics is not None:
            await self.metrics.close()
            self.metrics = None
        self.personas = None
        self.webhooks.close()
        if self._database is not None:
            await self._database.close()
            self._database = None

    def _model_health(self, database: Database, instance_id: str) -> ModelHealthStore | None:
        """The models turns skip for now, shared with every process (None: never skip)."""
        interval_ms = self._settings.model_probe_interval_ms
        if interval_ms == 0:
            return None
        health = ModelHealthStore(
            database,
            instance_id,
            self._probe,
            interval_s=seconds(interval_ms),
            probe_budget_s=self._settings.first_token_budget_s + self._settings.delivery_budget_s,
        )
        health.start()
        return health

    async def _probe(self, label: str) -> bool | None:
        """Ask the model a tiny question, as `--check` does; None if no provider can."""
        provider_name, _, model = label.partition(":")
        provider = self.config.providers.get(provider_name)
        if provider is None:
            return None
        entry = ModelEntry(provider_name, model)
        return (await probe(entry, provider, self._settings, base_url=None)).answered

    async def wait_idle(self, channel_id: int) -> None:
        """Wait until the channel's running and queued turns are done (for tests and tools)."""
        if self._locks is not None:
            await self._locks.wait_idle(str(channel_id))

    # -- the listener -------------------------------------------------------------------------

    async def handle_message(self, message: Any) -> None:
        # When it came, not when its checks were done: a /kill after it clears it, and its
        # queue age counts from here, however long the checks waited for the database.
        received_at = time.time()
        arrived(received_at)  # the database serves this message's work before later ones'
        self.memory.seen(message)  # before any await: memory sees a channel's messages in order
        self._gate.heard(message)
        if self.proxies.is_repost(message):
            claimed = await self.proxies.claim(message)
            if claimed is not None:
                original, asked = claimed
                asker = Asker(original.author_id, human=True)
                if await self._stopped_by(message, asker):
                    return  # the member's stop word, its tags stripped by the proxy
                if asked is not None:
                    await self._admit(message, asked, asker, received_at)
            return
        asker = Asker.author_of(message)
        waits = asker.human and self.proxies.arrived(message)
        try:
            addressed = await self._asked_by(message, asker)
        except BaseException:
            if waits:
                self.proxies.forget(message)
            raise
        if waits and await self.proxies.reposted(message, addressed):
            return  # a proxy took it (its repost is answered instead), or it asks for nothing
        if addressed is None:
            return
        await self._admit(message, addressed, asker, received_at)

    async def _asked_by(self, message: Any, asker: Asker) -> Asked | None:
        """How the message asks for a reply; None if it asks for none (a stop word that
        stopped an answer among them)."""
        if asker.human:
            self._drawn_in.human_spoke(str(message.channel.id))
            if await self._stopped_by(message, asker):
                return None
        return await self._reply_rule.addressed(message)

    async def _admit(
        self, message: Any, addressed: Asked, asker: Asker, received_at: float
    ) -> None:
        """Queue the message's turn (or start it) for `asker`, if the gate lets it on."""
        locks = await self.ensure_started()
        surface_errors = addressed.surfaces_errors
        follows: str | None = None

        async def limits_for(guild_id: int | None) -> UserLimits:
            # Read with the limits, in arrival order: an await outside it would let a later
            # message of the channel overtake this one on its way to the lock store.
            nonlocal follows
            follows = await self._follow_up_key(message, asker, addressed)
            return await self._limits_for(guild_id)

        if not await self._gate.admits_in_order(message, asker, surface_errors, limits_for):
            return  # else no await before submit: see admits_in_order
        trigger = Trigger(
            channel_id=str(message.channel.id),
            message_id=str(message.id),
            requester_id=str(asker.user_id),
            payload=addressed.payload(),
            received_at=received_at,
            follow_up_key=follows,
        )
        self._live_messages.keep(trigger.message_id or "", message)
        admission = await locks.submit(trigger)
        if admission in (Admission.IGNORED, Admission.FAILED):
            self._live_messages.take(trigger.message_id or "")
        if admission is Admission.FAILED:
            log.error(
                "message %s in channel %s could not be admitted", message.id, trigger.channel_id
            )
            if surface_errors:
                notices = EmbedNotices(self._library, message.channel, self.pacing)
                await post_notice_safely(notices, GENERATION_ERROR, trigger.channel_id)
        log.debug("message %s in channel %s: %s", message.id, message.channel.id, admission)

    async def _stopped_by(self, message: Any, asker: Asker) -> bool:
        """A stop word of the user being answered in the channel stops their answer and clears
        what they queued (`TOMORI_STOP_WORDS`); anyone else's is an ordinary message."""
        if not is_stop_word(message.content or "", self._settings.stop_words):
            return False
        locks = await self.ensure_started()
        # hidden from the model at once: the turn after the stopped one may read the channel
        # before the stop returns
        self._history.stops.add(str(message.id))
        stopped = False
        try:
            stopped = await locks.stop_for(str(message.channel.id), str(asker.user_id))
        finally:
            if not stopped:
                self._history.stops.discard(str(message.id))
        return stopped

    async def _follow_up_key(self, message: Any, asker: Asker, asked: Asked) -> str | None:
        """Whom the message is addressed to, for follow-ups (None: it neither is one nor
        takes any): a person's message, where follow-ups are on (`/tomori followups`)."""
        if not asker.human or not await self.config.follow_ups(guild_id_of(message)):
            return None
        return follow_up_key(asked.personas)

    def messages_changed(self, message_ids: Iterable[int]) -> None:
        """Messages were edited or deleted (the cogs' raw listeners): a queued trigger among
        them is answered as it is when its turn starts, and a deleted one not at all."""
        self._live_messages.changed(message_ids)

    def messages_deleted(self, message_ids: Iterable[int]) -> None:
        """Messages were deleted (the cogs' raw listeners): as `messages_changed`, and one
        waiting for a proxy's repost is not answered (its repost may be)."""
        self.proxies.waiting.deleted(message_ids)
        self._live_messages.changed(message_ids)

    async def _tell_expired(self, trigger: Trigger) -> None:
        """A queued message dropped unanswered: a direct trigger hears so, as a reply to it;
        one the channel answers on its own stays silent (the log says it)."""
        self._live_messages.take(trigger.message_id or "")
        if Scene.of(trigger.payload) is not None:
            await self._tell_channel(trigger.channel_id, SCENE_DROPPED)
            return
        if not Addressed.of(trigger.payload).surfaces_errors or trigger.message_id is None:
            log.info(
                "message %s in channel %s dropped unanswered; not told (autoreply)",
                trigger.message_id,
                trigger.channel_id,
            )
            return
        channel = await find_channel(self.bot, self._library, int(trigger.channel_id))
        if channel is None:
            return
        notices = EmbedNotices(
            self._library, channel, self.pacing, reply_to=int(trigger.message_id)
        )
        await post_notice_safely(notices, NOT_ANSWERED, trigger.channel_id)

    async def _tell_channel(self, channel_id: str, notice: Notice) -> None:
        channel = await find_channel(self.bot, self._library, int(channel_id))
        if channel is not None:
            notices = EmbedNotices(self._library, channel, self.pacing)
            await post_notice_safely(notices, notice, channel_id)

    async def _limits_for(self, guild_id: int | None) -> UserLimits:
        """The cooldown and daily tokens that hold for each user of this server (None: DMs)."""
        return await self.config.user_limits(guild_id)

    # -- a turn -------------------------------------------------------------------------------

    async def _run_turn(self, turn: Turn, guard: TurnGuard) -> None:
        """Read the trigger and its history, then run the model chain on them.

        A failure before the chain runs (a Discord call that got no answer, the database) is
        told to the person who asked directly, as a failed generation would be: the chain's
        own notices cannot, since it never ran.
        """
        self.pacing.watch(self.bot, self._library)  # a new session after a new login
        channel = await find_channel(self.bot, self._library, int(turn.channel_id))
        if channel is None:
            log.warning("skipping turn %s: its channel is gone", turn.turn_id)
            return
        scene = Scene.of(turn.trigger.payload)
        if scene is not None:
            await self._run_scene(turn, guard, channel, scene)
            return
        state = TurnState(
            turn.channel_id,
            notices=EmbedNotices(self._library, channel, self.pacing),
            trigger_message_id=turn.trigger.message_id,
            from_queue=turn.from_queue,
            metrics=self.metrics,
            guild_id=limit_scope(getattr(channel, "guild", None)),
        )
        surface_errors = Addressed.of(turn.trigger.payload).surfaces_errors
        manual = Manual.of(turn.trigger.payload)
        typing: asyncio.Task[None] | None = None
        try:
            try:
                if manual is not None:  # a command's: it answers the channel as it stands
                    message = await latest_message(channel, self._library, self.pacing)
                else:
                    message = await self._trigger_message(channel, turn)
                    if message is None:
                        log.warning("skipping turn %s: its message is gone", turn.turn_id)
                        return
                    limits = await self._limits_for(guild_id_of(message))
                    if limits.daily_tokens > 0 and self.metrics is not None:
                        # the turn before this one recorded its tokens: count them first
                        await until_stopped(guard, self.metrics.flushed())
                    requester = turn.trigger.requester_id or str(message.author.id)
                    if not await self._gate.may_start(
                        channel, message, requester, surface_errors, limits
                    ):
                        return
                assert self._locks is not None  # turns run only while the locks are open
                waiting = await self._locks.queued_message_ids(turn.channel_id)
                if guard.stop_requested():  # /kill came while it waited: no typing, no read
                    raise Stopped
                typing = self._typing(channel, state)  # from here: reading files takes a while
                config = await until_stopped(guard, self.config.for_turn(channel))
                tools = await until_stopped(guard, self._turn_tools(channel))
                cast = await until_stopped(guard, self._cast(channel, turn))
                images = config.images or any(
                    self.config.for_persona(config, p).images for p in cast
                )
                if message is None:
                    shown = Shown([], TurnAttachments())
                else:
                    reading = self._history.read(
                        channel, message, waiting, queued=turn.from_queue, images=images
                    )
                    shown = await until_stopped(guard, reading)
            except Stopped:
                log.info("turn %s stopped before any model was asked", turn.turn_id)
                self._record_unasked(state, StreamStatus.STOPPED_BY_USER)
                return
            except Exception:
                self._record_unasked(state, StreamStatus.ERROR)
                log.exception(
                    "turn %s in channel %s failed before any model was asked",
                    turn.turn_id,
                    turn.channel_id,
                )
                if surface_errors:
                    await state.post_notice(GENERATION_ERROR)
                return
            asking = manual.asking(config.prefill) if manual else Asking(prefill=config.prefill)
            if cast:
                await self._answer_as_personas(
                    turn,
                    guard,
                    state,
                    channel,
                    config,
                    shown,
                    cast,
                    tools,
                    surface_errors,
                    asking,
                )
                return
            context = self._history.items(shown, config.system_prompt, Voice()) + asking.said
            result = await answer_turn(
                turn,
                guard,
                state,
                self._bot_port(channel),
                entries=config.entries,
                providers=config.providers,
                tools=tools,
                settings=self._settings,
                context=context,
                request_notices=shown.notices,
                surface_errors=surface_errors,
                health=self.health,
                prefill=asking.prefill,
            )
            if result.forbidden:
                self._gate.deliverability.refused(channel.id)
        finally:
            if typing is not None:
                typing.cancel()
                await asyncio.gather(typing, return_exceptions=True)

    def _typing(self, channel: Any, state: TurnState) -> asyncio.Task[None]:
        """The turn's typing in `channel` until it shows something; its owner cancels it."""
        return asyncio.create_task(
            keep_typing(
                self._library,
                channel,
                seconds(self._settings.typing_keepalive_interval_ms),
                self.pacing,
                shown=lambda: bool(state.delivered),
            )
        )

    def _bot_port(self, channel: Any) -> Any:
        return self.memory.remembering(LibraryPort(self._library, channel, self.pacing), channel.id)

    # -- personas -----------------------------------------------------------------------------

    async def _cast(self, channel: Any, turn: Turn) -> list[Persona]:
        """The personas that answer the turn, in order (none: the bot does); those removed
        since the message came are left out."""
        keys = personas_of(turn.trigger.payload)
        guild = getattr(channel, "guild", None)
        if not keys or guild is None or self.personas is None:
            return []
        by_key = {p.key: p for p in await self.personas.of_server(str(guild.id))}
        return [by_key[key] for key in keys if key in by_key]

    async def _answer_as_personas(
        self,
        turn: Turn,
        guard: TurnGuard,
        state: TurnState,
        channel: Any,
        config: TurnConfig,
        shown: Shown,
        cast: list[Persona],
        tools: ToolRegistry,
        surface_errors: bool,
        asking: Asking,
    ) -> None:
        """Each persona answers in turn, under the one channel lock, each seeing what those
        before it said; an answer that names another persona draws it in, while the channel's
        budget of drawn-in turns (`TOMORI_MAX_BOT_TURNS`, reset by a human) allows. Each
        answer begins with the turn's prefill, but for a `/respond` one, which is the first
        answer's alone."""
        assert self.personas is not None  # the service is started
        guild_id = str(channel.guild.id)
        everyone = await self.personas.of_server(guild_id)
        names = {p.key: p.name for p in everyone}
        posters = await self._posters(shown)
        waiting = deque(cast)
        said: list[tuple[Persona, str]] = []
        while waiting and not guard.stop_requested():
            persona = waiting.popleft()
            speaking = state if not said else self._next_speaker(state)
            spoken = Spoken(persona, Voice(persona.key, posters, names), tuple(said))
            result = await self._speak(
                turn,
                guard,
                speaking,
                channel,
                config,
                shown,
                spoken,
                tools,
                surface_errors,
                asked=asking.said,
                prefill=asking.prefill_for(first=not said),
            )
            if result.unreachable:
                return
            said.append((persona, result.text))
            drawn = drawn_in(everyone, result.text, persona)
            channel_key = str(channel.id)
            if drawn is not None and drawn not in waiting and self._drawn_in.allows(channel_key):
                self._drawn_in.started(channel_key)
                waiting.append(drawn)

    async def _speak(
        self,
        turn: Turn,
        guard: TurnGuard,
        state: TurnState,
        channel: Any,
        config: TurnConfig,
        shown: Shown,
        spoken: Spoken,
        tools: ToolRegistry,
        surface_errors: bool,
        notices: tuple[ContextItem, ...] = (),
        asked: tuple[ContextItem, ...] = (),
        prefill: Prefill | None = None,
    ) -> ChainResult:
        """One persona's answer: one pass of its chain with the whole contract, posted under
        its name; it sees the channel, what a `/respond` asked (`asked`), then what was said
        before it in the turn. `notices` go in its request only, after the history's; the
        answer begins with `prefill` (a scene's lines take none)."""
        persona = spoken.persona
        own = self.config.for_persona(config, persona)
        context = self._history.items(shown, own.system_prompt, spoken.voice) + asked
        context += heard(spoken.said, persona)
        port = PersonaPort(
            self._library,
            channel,
            self.pacing,
            self.webhooks,
            persona,
            self._bot_port(channel),
            lambda webhook_port: self.memory.remembering(webhook_port, channel.id),
        )
        try:
            result = await answer_turn(
                turn,
                guard,
                state,
                port,
                entries=own.entries,
                providers=own.providers,
                tools=tools,
                settings=self._settings,
                context=context,
                request_notices=(*shown.notices, *notices),
                surface_errors=surface_errors,
                health=self.health,
                wardrobe=wardrobe_of(persona, port),
                prefill=prefill,
            )
        finally:
            await self._record_posted(str(channel.guild.id), channel, persona, state)
        if result.forbidden:
            self._gate.deliverability.refused(channel.id)
        return result

    @staticmethod
    def _next_speaker(state: TurnState) -> TurnState:
        """The state of a persona after the first: its own messages and notices; it stands
        free (the first one's answer already shows what it answers)."""
        return replace(
            state,
            from_queue=False,
            suppress_user_errors=False,
            deferred_timeout_notice=None,
            on_stream_progress=None,
            on_ceiling=None,
            delivered=[],
            on_first_message=None,
            undelivered=False,
        )

    async def _posters(self, shown: Shown) -> Mapping[str, str]:
        """Which persona posted each of the bot's and webhooks' messages shown (none if the
        store cannot say: the history then shows them by the names Discord shows)."""
        assert self.personas is not None
        me = self.bot.user
        ids = [
            str(m.id)
            for m in shown.messages
            if m.webhook_id or (me is not None and m.author.id == me.id)
        ]
        try:
            return await self.personas.posters(ids)
        except Exception as error:
            log.warning("could not read who posted the history's messages: %r", error)
            return {}

    async def _record_posted(
        self, guild_id: str, channel: Any, persona: Persona, state: TurnState
    ) -> None:
        """Keep which messages the persona posted: a reply to one is answered by it."""
        if self.personas is None or not state.delivered:
            return
        ids = [m.message_id for m in state.delivered]
        try:
            await self.personas.posted(guild_id, str(channel.id), persona, ids)
        except Exception as error:
            log.warning(
                "channel %s: could not record %s's messages %s: %r",
                channel.id,
                persona.name,
                ids,
                error,
            )

    async def _turn_tools(self, channel: Any) -> ToolRegistry:
        """The tools offered in this channel's turn, less those an admin turned off here (read
        afresh: a change applies from the next turn)."""
        guild = getattr(channel, "guild", None)
        switches: tuple[Switch, ...] = ()
        if guild is not None and self.tool_switches is not None:
            switches = await self.tool_switches.read(str(guild.id), str(channel.id))
        return await self._bot_tools.for_turn(switches)

    def tool_catalog(self) -> ToolCatalog:
        """What `/tomori tools` lists: every tool the bot could offer, and its MCP servers."""
        return self._bot_tools.catalog()

    def _record_unasked(self, state: TurnState, status: StreamStatus) -> None:
        if self.metrics is not None:
            self.metrics.record_outcome(TurnOutcome(state.guild_id, state.channel_id, None, status))

    async def _trigger_message(self, channel: Any, turn: Turn) -> Any:
        """The trigger, or None if it was deleted; any other failure to read it is raised."""
        message_id = turn.trigger.message_id or ""
        live = self._live_messages.take(message_id)
        if live is not None:
            return live
        lib = self._library.module
        try:  # a trigger replayed after a restart: read it again
            return await channel.fetch_message(int(message_id))
        except (lib.NotFound, lib.Forbidden, ValueError):
            return None  # deleted, or no longer readable: nothing to answer

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
            return scene_refused("scenes are played in a server's channels only.")
        locks = await self.ensure_started()
        assert self.personas is not None  # started
        if not (await self.config.resolved(guild_id, channel_id, cached=False)).scenes.value:
            return scene_refused(SCENES_OFF)
        names, cycles, instructions = request
        everyone = await self.personas.of_server(str(guild_id))
        try:
            scene = cast_scene(names, cycles, instructions, everyone)
        except ConfigError as error:
            return scene_refused(f"{error}.")
        limits = await self._limits_for(guild_id)
        refusal = await self._gate.command_refusal(guild_id, user_id, str(interaction_id), limits)
        if refusal is not None:
            told = cooldown_notice if refusal.limit is Limit.COOLDOWN else quota_notice
            return told(refusal.retry_at)
        payload = {**Addressed.DIRECTLY.payload(), **scene.payload()}
        admission = await locks.submit(Trigger(str(channel_id), None, str(user_id), payload))
        log.info("/scene in channel %s by %s: %s", channel_id, user_id, admission)
        if admission is Admission.IGNORED:
            return scene_refused("a /kill is still stopping this channel's answer: try again.")
        if admission is Admission.FAILED:
            return scene_refused("the scene could not be queued just now: try again.")
        shown = {p.key: p.name for p in everyone}
        return scene_accepted(scene, shown, queued=admission is Admission.QUEUED)

    async def _run_scene(self, turn: Turn, guard: TurnGuard, channel: Any, scene: Scene) -> None:
        """The scene's lines, each persona in turn for each cycle, all under the one lock the
        turn holds: each line is one persona's answer (`_speak`), told it writes only its own
        next message and seeing the channel and the scene so far; every line stands free (no
        reply), and the server's prefill is not used. /kill ends the line being written and
        the rest; a line that fails (its notice says why) ends the scene."""
        state = TurnState(
            turn.channel_id,
            notices=EmbedNotices(self._library, channel, self.pacing),
            from_queue=turn.from_queue,
            scene_turn=True,
            metrics=self.metrics,
            guild_id=limit_scope(getattr(channel, "guild", None)),
        )
        if getattr(channel, "guild", None) is None or not self._gate.deliverability.allows(channel):
            return
        assert self._locks is not None  # the turn runs: the service is started
        assert self.personas is not None
        typing: asyncio.Task[None] | None = None
        try:
            try:
                waiting = await self._locks.queued_message_ids(turn.channel_id)
                if guard.stop_requested():
                    raise Stopped
                typing = self._typing(channel, state)
                config = await until_stopped(guard, self.config.for_turn(channel))
                tools = await until_stopped(guard, self._turn_tools(channel))
                everyone = await until_stopped(
                    guard, self.personas.of_server(str(channel.guild.id))
                )
                by_key = personas_by_key(everyone)
                images = config.images or any(
                    self.config.for_persona(config, by_key[key]).images
                    for key in scene.cast
                    if key in by_key
                )
                reading = self._history.read_latest(channel, waiting, images=images)
                shown = await until_stopped(guard, reading)
                posters = await until_stopped(guard, self._posters(shown))
            except Stopped:
                log.info("scene %s stopped before any model was asked", turn.turn_id)
                self._record_unasked(state, StreamStatus.STOPPED_BY_USER)
                return
            except Exception:
                self._record_unasked(state, StreamStatus.ERROR)
                log.exception("scene %s in channel %s failed to start", turn.turn_id, channel.id)
                await state.post_notice(GENERATION_ERROR)
                return
            names = {p.key: p.name for p in everyone}
            said: list[tuple[Persona, str]] = []
            speaking = state
            for cycle, key in scene.lines():
                if guard.stop_requested():
                    break
                persona = by_key.get(key)
                if persona is None:  # removed since the scene was asked for
                    continue
                guard.touch()
                spoken = Spoken(persona, Voice(persona.key, posters, names), tuple(said))
                notice = speaker_notice(scene, persona, cycle, names)
                result = await self._speak(
                    turn, guard, speaking, channel, config, shown, spoken, tools, True, (notice,)
                )
                if result.status is not StreamStatus.COMPLETED or not result.text.strip():
                    log.info("scene %s ends at %s's line: %s", turn.turn_id, key, result.status)
                    return
                said.append((persona, result.text))
                speaking = self._next_speaker(state)
        finally:
            if typing is not None:
                typing.cancel()
                await asyncio.gather(typing, return_exceptions=True)

    # -- /kill --------------------------------------------------------------------------------

    @property
    def database(self) -> Database | None:
        """The store, once started (for the admin commands)."""
        return self._database

    async def kill(self, channel_id: int | None, user_id: int, can_manage_messages: bool) -> Notice:
        """Clear the channel's queue and stop its stream; the notice says what happened."""
        if channel_id is None:
            return KILL_CHANNEL_REQUIRED
        locks = await self.ensure_started()
        channel = str(channel_id)
        requester = await locks.requester_of(channel)
        if (
            self._settings.kill_policy is KillPolicy.REQUESTER
            and requester is not None
            and requester != str(user_id)
            and not can_manage_messages
        ):
            return KILL_NOT_ALLOWED
        outcome = await locks.kill(channel, requester_id=str(user_id))
        return KILL_NOTHING_TO_STOP if outcome.nothing_to_stop else KILL_STOPPED
