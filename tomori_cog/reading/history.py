"""Which messages of a channel a turn shows the model: what came before, then the trigger.

Kept apart from the turn because it is the part that grows as the cog learns to show the model
more of the conversation. What came before the trigger is the recent history, plus what the
history window may not reach: the chain of messages the trigger replies to, and in a thread the
thread's starter message. Each becomes what the model sees of it in `model_view.py`. Messages
arrive as the library's own objects; the attributes read here are the same in nextcord and
discord.py.

What came before is read from the messages the cog already saw through the gateway
(`memory.RecentMessages`) when they hold all of it, and over REST otherwise; either way the
model is shown the same messages.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from tomori.config.settings import Settings
from tomori.prompt.conversation import Unshown, in_time_order
from tomori.providers.base import ContextItem
from tomori_cog.discord_io import call_failures
from tomori_cog.library import Library
from tomori_cog.pacing import DiscordPacing
from tomori_cog.reading.attachments import read_attachments
from tomori_cog.reading.file_cache import FileCache
from tomori_cog.reading.image_bytes import ImageBytes, ImageHold
from tomori_cog.reading.memory import RecentMessages, Window
from tomori_cog.reading.model_view import ModelView, Shown
from tomori_cog.reading.unreadable import UnreadableFiles

log = logging.getLogger(__name__)

Context = tuple[ContextItem, ...]

LATEST = 2**63 - 1
"""A snowflake after every message: where a turn no message triggered (a scene) reads up to."""


class HistoryReader:
    """Builds a turn's context from the channel the trigger came in. One per cog: it keeps the
    files read lately, which no turn downloads again, those whose read failed lately, which
    every turn of the cog's channels skips, and the image bytes its turns hold at once."""

    def __init__(
        self,
        bot: Any,
        library: Library,
        settings: Settings,
        memory: RecentMessages,
        pacing: DiscordPacing,
        our_webhook: Callable[[int], Awaitable[bool]],
    ) -> None:
        """`our_webhook` says whether the bot created a webhook: its messages are the
        personas' answers, which a queued turn is shown as the bot's own (`_answers_since`)."""
        self._bot = bot
        self._our_webhook = our_webhook
        self._library = library
        self._settings = settings
        self._unreadable = UnreadableFiles()
        self._files = FileCache(settings.attachment_cache_bytes)
        """The files read lately: a message's files are downloaded once, not every turn."""
        self._images = ImageBytes(settings.image_bytes_in_flight)
        """The image bytes every turn of the cog holds at once."""
        self.unshown = Unshown()
        """Messages no turn shows the model (a stop word that stopped an answer, a proxied
        original), however the history was read."""
        self.view = ModelView(bot)
        self._memory = memory
        self._pacing = pacing
        """Every read waits its turn in the bot's request budget, behind what users wait on."""

    def hold_images(self) -> ImageHold:
        """What one turn's images will hold of the cog's image bytes (its owner releases it)."""
        return self._images.hold()

    async def read(
        self,
        channel: Any,
        trigger: Any,
        waiting: Collection[str],
        *,
        images: bool,
        hold: ImageHold,
        queued: bool = False,
        before: str | None = None,
    ) -> Shown:
        """The messages `context` shows, with their attachments read: once for a turn, whoever
        answers it (`items` makes each voice's context of them); its images are held in
        `hold`. `queued`: the answers since the trigger too, those before message `before`
        alone if given (`_answers_since`)."""
        window = await self._remembered(channel, trigger)
        if window is None:
            recent = {message.id: message for message in await self._recent(channel, trigger)}
        else:
            recent = {message.id: message for message in window.before}
        chain = await self._reply_chain(channel, trigger, window)
        earlier = list(chain)
        if queued:
            earlier += await self._answers_since(channel, trigger, window, before)
        starter = await self._thread_starter(channel, recent)
        if starter is not None:
            earlier.append(starter)
        shown = self._shown(in_time_order(recent.values(), earlier, trigger, waiting))
        kept = [trigger, *chain, *([starter] if starter is not None else [])]
        attached = await read_attachments(
            shown,
            self._settings,
            self._bot.user,
            images=images,
            unreadable=self._unreadable,
            cache=self._files,
            hold=hold,
        )
        return Shown(shown, attached, frozenset(message.id for message in kept))

    async def read_latest(
        self, channel: Any, waiting: Collection[str], *, images: bool, hold: ImageHold
    ) -> Shown:
        """The channel's last messages now, for a turn no message triggered (a scene): the
        history `read` shows before a trigger, as if the trigger were the next message."""
        window = await self._remembered(channel, None)
        if window is None:
            recent = {message.id: message for message in await self._recent(channel, None)}
        else:
            recent = {message.id: message for message in window.before}
        starter = await self._thread_starter(channel, recent)
        shown = self._shown(
            in_time_order(recent.values(), [starter] if starter else [], None, waiting)
        )
        attached = await read_attachments(
            shown,
            self._settings,
            self._bot.user,
            images=images,
            unreadable=self._unreadable,
            cache=self._files,
            hold=hold,
        )
        return Shown(shown, attached)

    def _shown(self, messages: list[Any]) -> list[Any]:
        """`messages` less the ones never shown (`unshown`), before their files are read."""
        return [message for message in messages if str(message.id) not in self.unshown]

    async def _remembered(self, channel: Any, trigger: Any | None) -> Window | None:
        """What memory holds around the trigger (None: now), if it holds the whole history
        window (once the gateway echoed the cog's own last writes there); None: read it over
        REST."""
        if not await self._memory.echoes(channel.id):
            return None
        at = LATEST if trigger is None else trigger.id
        return self._memory.window(channel.id, at, self._settings.history_limit)

    async def _recent(self, channel: Any, trigger: Any | None) -> list[Any]:
        """The channel's (or thread's) last messages before the trigger (None: the last ones
        now), over REST; memory keeps them for the turns after this one."""
        limit = self._settings.history_limit
        reading = self._memory.reading(channel.id)
        try:
            await self._pacing.read()
            messages = [message async for message in channel.history(limit=limit, before=trigger)]
        except call_failures(self._library) as error:  # answered without it, not unanswered
            log.info("no history for channel %s: %r", channel.id, error)
            return []
        self._memory.read(reading, LATEST if trigger is None else trigger.id, limit, messages)
        return messages

    async def _answers_since(
        self, channel: Any, trigger: Any, window: Window | None, before: str | None
    ) -> list[Any]:
        """The cog's own messages posted after the trigger (the bot's and its personas'): the
        answers to the messages queued before it, and a scene played meanwhile, which the
        model must see to go on from them, not answer them again. With `before` (a new take's
        first message), those posted before it alone: what the answer's first take was shown,
        never the answer itself nor anything after it."""
        if window is not None:
            after = window.after[: self._settings.history_limit]
        else:
            try:
                await self._pacing.read()
                after = [
                    message
                    async for message in channel.history(
                        limit=self._settings.history_limit, after=trigger
                    )
                ]
            except call_failures(self._library) as error:
                log.info("no answers since message %s: %r", trigger.id, error)
                return []
        bound = LATEST if before is None else int(before)
        return [message for message in after if message.id < bound and await self._ours(message)]

    async def _ours(self, message: Any) -> bool:
        """Whether the cog posted the message: as the bot, or as a persona (its webhook)."""
        me = self._bot.user
        if me is not None and message.author.id == me.id:
            return True
        return bool(message.webhook_id) and await self._our_webhook(message.webhook_id)

    async def _reply_chain(self, channel: Any, trigger: Any, window: Window | None) -> list[Any]:
        """The message the trigger replies to, the one that replies to, and so on back.

        At most `TOMORI_REPLY_CHAIN_LIMIT` messages; the chain ends early at a message that
        is not a reply, or whose parent was deleted or cannot be read.
        """
        chain: list[Any] = []
        message = trigger
        while len(chain) < self._settings.reply_chain_limit:
            # the copy Discord sent along with a remembered message is as old as that message
            # (the trigger's is fresh, as a REST read's would be): an edit since is not in it
            fresh = window is None or message is trigger
            message = await self._replied_to(channel, message, window, fresh)
            if message is None:
                break
            chain.append(message)
        return chain

    async def _replied_to(
        self, channel: Any, message: Any, window: Window | None, fresh: bool
    ) -> Any | None:
        """The message `message` replies to, or None: not a reply, or not readable (logged).

        From memory when it covers the parent, else the copy Discord sent along with
        `message` if that is `fresh`, else over REST."""
        reference = message.reference
        if reference is None or reference.message_id is None:
            return None
        if self._library.is_forward(reference) or reference.channel_id not in (None, channel.id):
            return None  # a forward, or a thread's link to the message it was started from
        if window is not None and window.covers(reference.message_id):
            parent = window.get(reference.message_id)
            if parent is None:
                log.info("message %s replies to a deleted message", message.id)
            return parent
        lib = self._library.module
        resolved = reference.resolved  # the library's copy, when Discord sent it along
        if fresh and isinstance(resolved, lib.Message):
            return resolved
        if isinstance(resolved, lib.DeletedReferencedMessage):
            log.info("message %s replies to a deleted message", message.id)
            return None
        try:
            await self._pacing.read()
            return await channel.fetch_message(reference.message_id)
        except call_failures(self._library) as error:
            log.info(
                "message %s replies to message %s, which cannot be read: %r",
                message.id,
                reference.message_id,
                error,
            )
            return None

    async def _thread_starter(self, channel: Any, recent: Mapping[int, Any]) -> Any | None:
        """In a thread, the message it was started with (None elsewhere, or if unreadable).

        The starter has the thread's ID. A forum post's is the thread's own first message; a
        thread started from a channel message has that message in its parent channel. It is
        read from Discord only when neither the history nor memory (of the post, or of the
        parent channel) knows it.
        """
        lib = self._library.module
        if not isinstance(channel, lib.Thread) or channel.id in recent:
            return None
        parent = channel.parent
        home = channel if isinstance(parent, lib.ForumChannel) else parent
        if home is not None:
            known, starter = self._memory.known(home.id, channel.id)
            if known:
                return starter  # None: deleted
        if home is None:
            log.info("thread %s: its parent channel is unknown, so is its starter", channel.id)
            return None
        try:
            await self._pacing.read()
            return await home.fetch_message(channel.id)
        except lib.NotFound:  # a thread started without a message, or its starter deleted
            log.debug("thread %s has no starter message", channel.id)
            return None
        except call_failures(self._library) as error:
            log.info("thread %s: its starter message cannot be read: %r", channel.id, error)
            return None
