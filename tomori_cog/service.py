"""What the cog does, whichever library the bot uses.

The service owns the database, the channel locks and the providers. The library-specific cog
classes only forward `on_message`, `/kill` and their life cycle to it. Messages arrive as the
library's own objects; the attributes read here (author, content, mentions, reference,
attachments, history) are the same in nextcord and discord.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from tomori.answering import answer_turn
from tomori.config import KillPolicy, Settings
from tomori.context import StreamingContext
from tomori.locks import Admission, ChannelLocks, Trigger, Turn, TurnGuard
from tomori.locks.backends import lock_backend
from tomori.metrics import Metrics
from tomori.models import ModelChain
from tomori.notices import (
    GENERATION_ERROR,
    KILL_CHANNEL_REQUIRED,
    KILL_NOT_ALLOWED,
    KILL_NOTHING_TO_STOP,
    KILL_STOPPED,
    Notice,
)
from tomori.providers.base import Provider
from tomori.stoppable import Stopped, until_stopped
from tomori.store import Database
from tomori.store.connect import open_database
from tomori.stream_once import post_notice_safely
from tomori.tools import CURRENT_TIME, ToolRegistry
from tomori_cog.discord_io import EmbedNotices, LibraryPort, call_failures, keep_typing
from tomori_cog.history import HistoryReader
from tomori_cog.library import Library
from tomori_cog.message_tool import message_lookup_tool

log = logging.getLogger(__name__)


class TomoriService:
    def __init__(self, bot: Any, library: Library, settings: Settings, chain: ModelChain) -> None:
        self._bot = bot
        self._library = library
        self._settings = settings
        self._chain = chain
        self._database: Database | None = None
        self._locks: ChannelLocks | None = None
        self.metrics: Metrics | None = None
        builtin = (CURRENT_TIME, message_lookup_tool(bot, library))
        self.tools = ToolRegistry(tool for tool in builtin if tool.name in settings.tools)
        self._history = HistoryReader(bot, library, settings, images=chain.sees_images)
        self._providers: dict[str, Provider] = {}
        self._live_messages: dict[str, tuple[Any, float]] = {}
        """Trigger messages by ID, with when they came, until their turn reads them."""
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
                        lock_backend(database, self._settings), self._settings, self._run_turn
                    )
                    self._providers = self._chain.build_providers()
                    self._database, self._locks = database, locks
                    self.metrics = Metrics(database)
                    await locks.start()
                except BaseException:
                    await self._release_resources()
                    raise
                log.info("tomori serving with %s", self._chain.described)
            return self._locks

    async def close(self) -> None:
        """Stop every turn, release its lock, close the providers and the database."""
        async with self._start_lock:
            self._closed = True
            await self._release_resources()

    async def _release_resources(self) -> None:
        # In this order: turns end (and release their locks) while providers and the
        # database are still open; each is forgotten only once it is closed.
        if self._locks is not None:
            await self._locks.close()
            self._locks = None
        for provider in self._providers.values():
            await provider.aclose()
        self._providers = {}
        if self.metrics is not None:
            await self.metrics.close()
            self.metrics = None
        if self._database is not None:
            await self._database.close()
            self._database = None

    async def wait_idle(self, channel_id: int) -> None:
        """Wait until the channel's running and queued turns are done (for tests and tools)."""
        if self._locks is not None:
            await self._locks.wait_idle(str(channel_id))

    # -- the listener -------------------------------------------------------------------------

    async def handle_message(self, message: Any) -> None:
        surface_errors = self._reply_mode(message)
        if surface_errors is None:
            return
        locks = await self.ensure_started()
        trigger = Trigger(
            channel_id=str(message.channel.id),
            message_id=str(message.id),
            requester_id=str(message.author.id),
            payload={"surface_errors": surface_errors},
        )
        self._forget_unservable_messages()
        self._live_messages[trigger.message_id or ""] = (message, time.monotonic())
        admission = await locks.submit(trigger)
        if admission in (Admission.IGNORED, Admission.FAILED):
            self._live_messages.pop(trigger.message_id or "", None)
        if admission is Admission.FAILED:
            log.error(
                "message %s in channel %s could not be admitted", message.id, trigger.channel_id
            )
            if surface_errors:
                notices = EmbedNotices(self._library, message.channel)
                await post_notice_safely(
                    StreamingContext(trigger.channel_id, notices), GENERATION_ERROR
                )
        log.debug("message %s in channel %s: %s", message.id, message.channel.id, admission)

    def _forget_unservable_messages(self) -> None:
        """Drop kept messages whose trigger can no longer be served from memory.

        A trigger cleared by /kill or too old to answer never reads its message back; past
        `TOMORI_QUEUE_MAX_AGE_MS` none will, so keeping them would leak one message per such
        trigger for the life of the bot. Oldest first: the dict keeps arrival order.
        """
        cutoff = time.monotonic() - self._settings.queue_max_age_s
        for message_id, (_, kept_at) in list(self._live_messages.items()):
            if kept_at >= cutoff:
                break
            del self._live_messages[message_id]

    def _reply_mode(self, message: Any) -> bool | None:
        """None to ignore the message; else whether errors are shown (direct triggers)."""
        me = self._bot.user
        author = message.author
        if me is None or author.id == me.id:
            return None
        if (author.bot or message.webhook_id) and not self._settings.reply_to_bots:
            return None
        types = self._library.module.MessageType
        if message.type not in (types.default, types.reply):
            return None
        text = (message.content or "").strip()
        if (not text and not message.attachments) or text.startswith("!"):
            return None
        if message.guild is None or any(user.id == me.id for user in message.mentions):
            return True
        replied = message.reference.resolved if message.reference is not None else None
        if getattr(getattr(replied, "author", None), "id", None) == me.id:
            return True
        if message.channel.id in self._settings.channels:
            return False
        return None

    # -- a turn -------------------------------------------------------------------------------

    async def _run_turn(self, turn: Turn, guard: TurnGuard) -> None:
        """Read the trigger and its history, then run the model chain on them.

        A failure before the chain runs (a Discord call that got no answer, the database) is
        told to the person who asked directly, as a failed generation would be: the chain's
        own notices cannot, since it never ran.
        """
        channel = await self._channel(int(turn.channel_id))
        if channel is None:
            log.warning("skipping turn %s: its channel is gone", turn.turn_id)
            return
        ctx = StreamingContext(
            turn.channel_id,
            notices=EmbedNotices(self._library, channel),
            trigger_message_id=turn.trigger.message_id,
            from_queue=turn.from_queue,
            metrics=self.metrics,
        )
        surface_errors = bool(turn.trigger.payload.get("surface_errors", False))
        typing: asyncio.Task[None] | None = None
        try:
            try:
                message = await self._trigger_message(channel, turn)
                if message is None:
                    log.warning("skipping turn %s: its message is gone", turn.turn_id)
                    return
                assert self._locks is not None  # turns run only while the locks are open
                waiting = await self._locks.queued_message_ids(turn.channel_id)
                if guard.stop_requested():  # /kill came while it waited: no typing, no read
                    raise Stopped
                typing = asyncio.create_task(  # from here: reading the files may take a while
                    keep_typing(self._library, channel, self._settings.typing_interval_s)
                )
                reading = self._history.context(channel, message, waiting, queued=turn.from_queue)
                context, notices = await until_stopped(guard, reading)
            except Stopped:
                log.info("turn %s stopped before any model was asked", turn.turn_id)
                return
            except Exception:
                log.exception(
                    "turn %s in channel %s failed before any model was asked",
                    turn.turn_id,
                    turn.channel_id,
                )
                if surface_errors:
                    await post_notice_safely(ctx, GENERATION_ERROR)
                return
            await answer_turn(
                turn,
                guard,
                ctx,
                LibraryPort(self._library, channel),
                chain=self._chain,
                providers=self._providers,
                tools=self.tools,
                settings=self._settings,
                context=context,
                request_notices=notices,
                surface_errors=surface_errors,
            )
        finally:
            if ctx.delivered:
                guard.mark_answered()  # cut short now, it must not be answered again elsewhere
            if typing is not None:
                typing.cancel()
                await asyncio.gather(typing, return_exceptions=True)

    async def _channel(self, channel_id: int) -> Any:
        channel = self._bot.get_channel(channel_id)
        if channel is not None:
            return channel
        try:
            return await self._bot.fetch_channel(channel_id)
        except call_failures(self._library) as error:
            log.info("could not fetch channel %s: %r", channel_id, error)
            return None

    async def _trigger_message(self, channel: Any, turn: Turn) -> Any:
        """The trigger, or None if it was deleted; any other failure to read it is raised."""
        message_id = turn.trigger.message_id or ""
        live = self._live_messages.pop(message_id, None)
        if live is not None:
            return live[0]
        lib = self._library.module
        try:  # a trigger replayed after a restart: read it again
            return await channel.fetch_message(int(message_id))
        except (lib.NotFound, lib.Forbidden, ValueError):
            return None  # deleted, or no longer readable: nothing to answer

    # -- /kill --------------------------------------------------------------------------------

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
