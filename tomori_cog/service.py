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
from collections.abc import Iterable
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
from tomori.generation.mcp import McpTools, mcp_tools_for
from tomori.generation.tools import CURRENT_TIME, ToolRegistry
from tomori.locks import Admission, ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.policy.interruptions import follow_up_key, is_stop_word
from tomori.policy.limits import BotTurns, Limit, UserLimits
from tomori.policy.metrics import Metrics
from tomori.policy.model_health import ModelHealthStore
from tomori.policy.personas import PersonaStore
from tomori.policy.scenes import (
    SCENE_DROPPED,
    SCENES_OFF,
    cast_scene,
    scene_accepted,
    scene_refused,
)
from tomori.policy.tool_switches import BotTools, ToolCatalog, ToolSwitchStore
from tomori.store import Database
from tomori.store.connect import open_database
from tomori.store.first_come import arrived
from tomori.turns import Addressed, ChannelConfig, Stage, TurnRequest, play
from tomori_cog.discord_io import EmbedNotices, find_channel
from tomori_cog.library import Library
from tomori_cog.listener.gate import AdmissionGate, Asker, guild_id_of
from tomori_cog.listener.live_messages import LiveMessages
from tomori_cog.listener.proxies import Proxies
from tomori_cog.listener.reply_rule import ReplyRule
from tomori_cog.pacing import DiscordPacing
from tomori_cog.reading.history import HistoryReader
from tomori_cog.reading.memory import RecentMessages
from tomori_cog.reading.message_tool import message_lookup_tool
from tomori_cog.surface import DiscordParts, DiscordSurface
from tomori_cog.webhooks import Webhooks

log = logging.getLogger(__name__)


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
        self._stage: Stage | None = None
        """What every turn runs with (`tomori.turns.Stage`), once started."""
        self._parts: DiscordParts | None = None
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
        self.proxies: Proxies[TurnRequest] = Proxies(bot, library, settings)
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
                    self.health = self._model_health(database, locks.instance_id)
                    self.tool_switches = ToolSwitchStore(database)
                    self._stage = Stage(
                        self._settings,
                        locks,
                        self.config,
                        self._bot_tools,
                        self.tool_switches,
                        self.personas,
                        self.metrics,
                        self.health,
                        self._drawn_in,
                    )
                    self._parts = DiscordParts(
                        self.bot,
                        self._library,
                        self._settings,
                        self.pacing,
                        self.config,
                        self.metrics,
                        self._gate,
                        self._history,
                        self.memory,
                        self.webhooks,
                        self._live_messages,
                    )
                    if self.mcp is not None:
                        self.mcp.start()
                    # Last: the locks run the turns they recover at once, with all of the above.
                    await locks.start()
                    self.pacing.watch(self.bot, self._library)
                    self._sharing = asyncio.create_task(
                        self.pacing.shared(locks.live_processes), name="tomori-request-share"
                    )
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
        self._stage = self._parts = None
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

    async def _asked_by(self, message: Any, asker: Asker) -> TurnRequest | None:
        """How the message asks for a reply; None if it asks for none (a stop word that
        stopped an answer among them)."""
        if asker.human:
            self._drawn_in.human_spoke(str(message.channel.id))
            if await self._stopped_by(message, asker):
                return None
        return await self._reply_rule.addressed(message)

    async def _admit(
        self, message: Any, addressed: TurnRequest, asker: Asker, received_at: float
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
        trigger = addressed.trigger(
            str(message.channel.id),
            str(message.id),
            str(asker.user_id),
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

    async def _follow_up_key(self, message: Any, asker: Asker, asked: TurnRequest) -> str | None:
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
        request = TurnRequest.of(trigger)
        if request.scene is not None:
            await self._tell_channel(trigger.channel_id, SCENE_DROPPED)
            return
        if not request.surfaces_errors or trigger.message_id is None:
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
        """Play the turn in its channel (`tomori.turns.play`), if the channel is still there."""
        assert self._stage is not None
        assert self._parts is not None
        self.pacing.watch(self.bot, self._library)  # a new session after a new login
        channel = await find_channel(self.bot, self._library, int(turn.channel_id))
        if channel is None:
            log.warning("skipping turn %s: its channel is gone", turn.turn_id)
            return
        await play(self._stage, DiscordSurface(self._parts, channel), turn, guard)

    def tool_catalog(self) -> ToolCatalog:
        """What `/tomori tools` lists: every tool the bot could offer, and its MCP servers."""
        return self._bot_tools.catalog()

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
        asked = TurnRequest(Addressed.DIRECTLY, scene=scene)
        admission = await locks.submit(asked.trigger(str(channel_id), None, str(user_id)))
        log.info("/scene in channel %s by %s: %s", channel_id, user_id, admission)
        if admission is Admission.IGNORED:
            return scene_refused("a /kill is still stopping this channel's answer: try again.")
        if admission is Admission.FAILED:
            return scene_refused("the scene could not be queued just now: try again.")
        shown = {p.key: p.name for p in everyone}
        return scene_accepted(scene, shown, queued=admission is Admission.QUEUED)

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
