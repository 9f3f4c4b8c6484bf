"""A trigger's progress as the bot's own reactions on it, through the bot's request budget.

`TriggerMarks` is the `tomori.delivery.progress.MarkPort` of one message. Told the one mark the
message should show, it catches up in a task of its own: it waits for a reaction's place
(`DiscordPacing.react`: the channel's reaction bucket, behind every other request of the bot),
then sends what still differs, the new mark before the old one's removal, so a mark that
waited while the turn moved on is never sent. The channel's reaction bucket counts a change
from when Discord answered it: the next waits a full window after. `ProgressMarks` keeps one
`Progress` per trigger in this process, so the stage the listener reports (queued) and the
turn's stages reach the same one, and forgets it once its ending is shown.

A queued mark is sent only while the lock store still holds the message in its queue: its turn
may have begun in another process meanwhile, which takes down a queued mark it may find
(`from_queue`), and must not find one put up after it looked.

Failures never reach a turn. A message gone (404) ends its marks; a refusal (403: the bot may
not react there) turns marks off in that channel for `REFUSED_FOR_S`, so a channel without the
permission costs one invalid request (which count toward Discord's ban), not one a turn; any
other failure gives that one change up, logged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tomori.delivery.progress import QUEUED_MARK, SHOW_AFTER_S, Progress, Stage
from tomori.locks import ChannelLocks
from tomori.locks.settling import settle
from tomori_cog.discord_io import call_failures
from tomori_cog.library import Library
from tomori_cog.pacing import DiscordPacing

log = logging.getLogger(__name__)

REFUSED_FOR_S = 600.0
"""How long a channel that refused a reaction shows no marks."""
MOST_KEPT = 10_000
"""Triggers whose marks are kept at most; past it, those older than `STALE_S` are forgotten
(one queued here whose turn ran in another process never ends here)."""
STALE_S = 3_600.0


class TriggerMarks:
    """The marks of one message, caught up in the port's own task (see the module)."""

    def __init__(
        self, owner: ProgressMarks, channel: Any, message_id: int, shown: frozenset[str]
    ) -> None:
        self._owner = owner
        self.channel = channel
        self.message_id = message_id
        self._shown = set(shown)
        self._wanted: str | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def idle(self) -> bool:
        return self._task is None

    def show(self, mark: str | None) -> None:
        self._wanted = mark
        if self._task is None and self._step() is not None:
            self._task = self._owner.run(self, self._catch_up())

    def _step(self) -> tuple[bool, str] | None:
        """The next change, as (add?, mark); None when the message shows what it should."""
        if self._wanted is not None and self._wanted not in self._shown:
            return True, self._wanted
        extra = next((mark for mark in self._shown if mark != self._wanted), None)
        return None if extra is None else (False, extra)

    async def _catch_up(self) -> None:
        owner, channel_id = self._owner, self.channel.id
        try:
            while (step := self._step()) is not None:
                if not owner.allowed(channel_id):
                    return
                async with owner.pacing.react(channel_id) as slot:
                    step = self._step()  # what waited may have changed: only what differs
                    if step is None:
                        slot.unused()
                        return
                    add, mark = step
                    if add and mark == QUEUED_MARK and not await owner.still_queued(self):
                        self._wanted = None
                        slot.unused()
                        continue
                    if not await self._send(add, mark):
                        return
        finally:
            self._task = None
            owner.tidy(self)

    async def _send(self, add: bool, mark: str) -> bool:
        """Add or remove `mark`; False when this message takes no more."""
        library, owner = self._owner.library, self._owner
        message = self.channel.get_partial_message(self.message_id)
        try:
            if add:
                await message.add_reaction(mark)
            else:
                await message.remove_reaction(mark, owner.me())
        except library.module.Forbidden as error:
            log.info("channel %s refused a reaction (%r): no marks there", self.channel.id, error)
            owner.refused(self.channel.id)
            return False
        except library.module.NotFound:
            return False  # the message is gone, and its marks with it
        except call_failures(library) as error:
            log.info("message %s: a mark was not changed: %r", self.message_id, error)
            if add:
                self._wanted = None  # given up: not retried until the next stage
            else:
                self._shown.discard(mark)
            return True
        if add:
            self._shown.add(mark)
        else:
            self._shown.discard(mark)
        return True


class _Marked:
    """One trigger's `Progress` and its port, as the turn's `ProgressHook`."""

    __slots__ = ("_owner", "port", "progress", "since")

    def __init__(self, owner: ProgressMarks, progress: Progress, port: TriggerMarks) -> None:
        self._owner = owner
        self.progress = progress
        self.port = port
        self.since = time.monotonic()

    def report(self, stage: Stage) -> None:
        self.progress.report(stage)
        self._owner.tidy(self.port)


class ProgressMarks:
    """This process's triggers showing their progress (see the module)."""

    def __init__(
        self,
        bot: Any,
        library: Library,
        pacing: DiscordPacing,
        locks: Callable[[], Awaitable[ChannelLocks]],
        *,
        show_after_s: float = SHOW_AFTER_S,
    ) -> None:
        self._bot = bot
        self.library = library
        self.pacing = pacing
        self._locks = locks
        self._show_after_s = show_after_s
        self._marked: dict[str, _Marked] = {}
        self._tasks: dict[asyncio.Task[None], int] = {}
        """Each catching-up task, by the channel it works in."""
        self._refused: dict[int, float] = {}

    def progress(
        self, channel: Any, message_id: str, visible: frozenset[Stage], *, from_queue: bool
    ) -> _Marked:
        """The hook of message `message_id`'s progress: the one its queued stage went to, if
        it was queued here; `from_queue` without one: it may show the queued mark."""
        marked = self._marked.get(message_id)
        if marked is not None:
            return marked
        self._forget_stale()
        maybe = from_queue and Stage.QUEUED in visible
        shown = frozenset({QUEUED_MARK}) if maybe else frozenset()
        port = TriggerMarks(self, channel, int(message_id), shown)
        progress = Progress(port, visible, show_after_s=self._show_after_s)
        marked = self._marked[message_id] = _Marked(self, progress, port)
        return marked

    def queued(self, channel: Any, message_id: str, visible: frozenset[Stage]) -> None:
        """The listener queued message `message_id`: unless its turn already began here."""
        if message_id not in self._marked:
            self.progress(channel, message_id, visible, from_queue=False).report(Stage.QUEUED)

    def ended(self, channel: Any, message_id: str, visible: frozenset[Stage], stage: Stage) -> None:
        """Message `message_id` left the queue unanswered (dropped for age, cleared by a
        /kill): it shows `stage`, and no queued mark any process put on it."""
        self.progress(channel, message_id, visible, from_queue=True).report(stage)

    async def settled(self, channel_id: int) -> None:
        """Wait until every mark of `channel_id` this process was told is on Discord."""
        await settle(lambda: [task for task, at in self._tasks.items() if at == channel_id])

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()

    # -- for the ports -----------------------------------------------------------------------

    def run(self, port: TriggerMarks, work: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks[task] = port.channel.id
        task.add_done_callback(lambda done: self._tasks.pop(done, None))
        return task

    def tidy(self, port: TriggerMarks) -> None:
        """Forget a trigger whose ending is shown."""
        key = str(port.message_id)
        marked = self._marked.get(key)
        if marked is not None and marked.port is port and marked.progress.ended and port.idle:
            del self._marked[key]

    def allowed(self, channel_id: int) -> bool:
        until = self._refused.get(channel_id)
        if until is None:
            return True
        if time.monotonic() < until:
            return False
        del self._refused[channel_id]
        return True

    def refused(self, channel_id: int) -> None:
        self._refused[channel_id] = time.monotonic() + REFUSED_FOR_S

    def me(self) -> Any:
        return self._bot.user

    async def still_queued(self, port: TriggerMarks) -> bool:
        """Whether the lock store still holds the port's message in its channel's queue (when
        it cannot say: yes, a mark too many being better than a question unmarked)."""
        try:
            locks = await self._locks()
            queued = await locks.queued_message_ids(str(port.channel.id))
        except Exception as error:
            log.info("could not read the queue of channel %s: %r", port.channel.id, error)
            return True
        return str(port.message_id) in queued

    def _forget_stale(self) -> None:
        if len(self._marked) < MOST_KEPT:
            return
        oldest = time.monotonic() - STALE_S
        for key in [k for k, m in self._marked.items() if m.since < oldest and m.port.idle]:
            del self._marked[key]
