"""The recent messages of each channel, as the gateway showed them: a turn's history without a
history request, whenever memory is sure to hold the whole window the turn needs.

Reading a channel's history over REST for every turn costs one request per turn, which at
hundreds of busy channels is a large share of the bot's request budget; yet the cog has already
seen each of those messages arrive, be edited or be deleted. So the cog keeps, per channel, the
messages it saw, and a turn reads from them when memory can prove it misses nothing there:

- A channel is remembered from the first message the cog sees in it: from then on memory holds
  every message at or after that one (`complete_from`). A history read over REST extends that
  backwards to the start of what it returned (or to the channel's beginning, if it returned
  fewer messages than asked). A channel Discord showed with no last message, as a session
  began, is held whole from the start (`never_written`): a bot that starts in a server of new
  channels reads no history at all.
- Whatever could have happened unseen makes memory forget: a disconnect, a resume or a new
  session (messages may have been sent meanwhile), a channel's permissions changing (the bot
  may not have seen it for a while), a message edit that cannot be applied, a send or an edit
  of the cog's own that failed half way. The next turn there reads over REST again.
- An edit replaces the message with its new version; a delete removes it. A REST read that
  was under way while an edit, a delete or a forgetting happened is used for its turn but not
  kept: it may hold what memory has since learned is gone.
- The cog's own answers reach memory as the gateway echoes them, which may be after the next
  turn starts. Each send and edit of the cog's is noted until its echo shows the same text; a
  turn waits a moment for those echoes, and reads over REST if they do not come.

Bounded twice: at most `per_channel` messages per channel (the oldest dropped, which moves
`complete_from` forward), and at most `channels` channels (the one unused longest forgotten).
Messages are the library's own objects; nothing here depends on which library.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tomori.delivery.port import as_shown

ECHO_WAIT_S = 1.0
"""How long a turn waits for the gateway to echo the cog's last sends and edits in its channel
before it reads the history over REST instead."""

FROM_THE_START = 0
"""`complete_from` of a channel whose every message since it began is held."""


@dataclass
class _Channel:
    """One channel's remembered messages, and what memory knows of their completeness."""

    complete_from: int
    """Every message whose ID is at least this is held (snowflakes order messages by time)."""
    held: dict[int, Any] = field(default_factory=dict)
    changes: int = 0
    """Counts edits and deletes, so a REST read that overlapped one is not kept."""
    unechoed: dict[int, list[str]] = field(default_factory=dict)
    """By ID, the texts the cog wrote to its own messages that the gateway has not echoed
    yet, oldest first (a text may come back, so each echo answers the oldest it matches)."""
    echoed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set while `unechoed` is empty."""

    def __post_init__(self) -> None:
        self.echoed.set()


@dataclass(frozen=True)
class Window:
    """What memory holds of a channel around a trigger: everything from `complete_from` on."""

    before: list[Any]
    """The last messages before the trigger, oldest first, as many as the history shows."""
    after: list[Any]
    """Every message after the trigger, oldest first."""
    complete_from: int
    held: dict[int, Any]

    def covers(self, message_id: int) -> bool:
        """Whether memory would hold this message if it still existed."""
        return message_id >= self.complete_from

    def get(self, message_id: int) -> Any | None:
        """The message, if held (if `covers` says so, None means it was deleted)."""
        return self.held.get(message_id)


@dataclass(frozen=True)
class Reading:
    """A REST read of a channel's history in progress, to be kept in memory if nothing
    changed while it ran."""

    channel_id: int
    channel: _Channel | None
    changes: int


class RecentMessages:
    """Per channel, the messages the cog saw through the gateway (see the module's docstring).

    One owner, the cog's chat; fed by its event listeners, read by the history reader."""

    def __init__(self, per_channel: int, channels: int) -> None:
        self._per_channel = per_channel
        self._max_channels = channels
        self._channels: OrderedDict[int, _Channel] = OrderedDict()
        self._floors: OrderedDict[int, int] = OrderedDict()
        """By channel forgotten while writes of the cog's were still to be echoed there, the
        first ID after them: held again, the channel is complete from there at the earliest,
        since those messages exist though memory has not seen them."""

    @property
    def enabled(self) -> bool:
        return self._max_channels > 0

    def authors_in(self, guild_id: int) -> Iterator[Any]:
        """The authors of the messages held from server `guild_id`'s channels (webhooks'
        aside): members seen speaking lately, whom a bot without the members intent does not
        have cached."""
        for channel in self._channels.values():
            for message in channel.held.values():
                guild = getattr(message, "guild", None)
                if guild is not None and guild.id == guild_id and not message.webhook_id:
                    yield message.author

    # -- what the gateway shows ---------------------------------------------------------------

    def seen(self, message: Any) -> None:
        """A message created in a channel the bot reads (anyone's, the cog's own included)."""
        if not self.enabled:
            return
        channel = self._channels.get(message.channel.id)
        if channel is None:
            channel = self._begin(message.channel.id, message.id)
        self._channels.move_to_end(message.channel.id)
        self._keep(channel, message)

    def edited(
        self, channel_id: int, message_id: int, rebuild: Callable[[Any], Any | None]
    ) -> None:
        """A message was edited; `rebuild(held)` is its new version from the held one, None if
        it cannot be built from what the gateway sent (then the channel is forgotten: its
        copy would be stale)."""
        channel = self._channels.get(channel_id)
        if channel is None:
            return
        channel.changes += 1  # even of a message memory does not hold: a read may bring it
        held = channel.held.get(message_id)
        if held is None:
            return  # older than memory, or deleted already
        message = rebuild(held)
        if message is None:
            self.forget(channel_id)
            return
        self._keep(channel, message)

    def deleted(self, channel_id: int, message_ids: Iterable[int]) -> None:
        """Messages were deleted, one or in bulk."""
        channel = self._channels.get(channel_id)
        if channel is None:
            return
        channel.changes += 1
        for message_id in message_ids:
            channel.held.pop(message_id, None)
            channel.unechoed.pop(message_id, None)
        self._update_echoed(channel)

    def never_written(self, channel_ids: Iterable[int]) -> None:
        """Discord just showed these channels without a last message (none was ever sent in
        them): memory holds each one whole, so its first turns need no history request. Only
        into room memory has, as the channels unused longest: a channel it holds is kept."""
        for channel_id in channel_ids:
            if len(self._channels) >= self._max_channels:
                return
            if channel_id not in self._channels:
                floor = self._floors.pop(channel_id, FROM_THE_START)
                self._channels[channel_id] = _Channel(complete_from=floor)
                self._channels.move_to_end(channel_id, last=False)

    def forget(self, channel_id: int) -> None:
        """Memory may miss what happened in this channel: read it over REST next time."""
        channel = self._channels.pop(channel_id, None)
        if channel is not None:
            channel.echoed.set()  # nobody waits for a channel memory no longer holds
            if channel.unechoed:
                self._floors[channel_id] = max(channel.unechoed) + 1
                while len(self._floors) > self._max_channels:
                    self._floors.popitem(last=False)

    def forget_all(self) -> None:
        """The gateway may have missed messages (a disconnect, a resume, a new session)."""
        for channel_id in list(self._channels):
            self.forget(channel_id)

    # -- the cog's own writes -----------------------------------------------------------------

    def wrote(self, channel_id: int, message_id: int, content: str, *, new: bool) -> None:
        """The cog's send (`new`) or edit of `message_id` with `content` was answered by
        Discord: memory is not sure of the channel until the gateway echoes that text. A send
        in a channel memory does not hold begins it there, as the echo will."""
        channel = self._channels.get(channel_id)
        if channel is None and new and self.enabled:
            channel = self._begin(channel_id, message_id)
        if channel is None:
            return
        channel.changes += 1  # a read under way may bring the text from before this write
        if message_id < channel.complete_from:
            return  # memory shows nothing of it, old or new
        shown = as_shown(content)
        held = channel.held.get(message_id)
        due = channel.unechoed.get(message_id)
        if due:
            due.append(shown)
        elif held is None or (held.content or "") != shown:
            channel.unechoed[message_id] = [shown]
        elif not new:
            # the text memory holds already: its echo came before Discord's answer, or the edit
            # changed nothing and its echo is still coming, which would later be taken for a
            # later write's echo. Memory cannot tell: it lets the channel go (read over REST).
            self.forget(channel_id)
            return
        # else a send whose echo came before Discord's answer: nothing to wait for
        self._update_echoed(channel)

    async def echoes(self, channel_id: int) -> bool:
        """Wait (at most `ECHO_WAIT_S`) until the gateway echoed the cog's own writes in the
        channel; False if it did not (the channel is then forgotten)."""
        channel = self._channels.get(channel_id)
        if channel is None:
            return False
        try:
            await asyncio.wait_for(channel.echoed.wait(), ECHO_WAIT_S)
        except TimeoutError:
            self.forget(channel_id)
            return False
        return self._channels.get(channel_id) is channel

    def window(self, channel_id: int, trigger_id: int, limit: int) -> Window | None:
        """The history before the trigger and the messages after it, if memory holds all of
        them (None if a REST read is needed)."""
        channel = self._channels.get(channel_id)
        if channel is None or channel.unechoed or trigger_id < channel.complete_from:
            return None
        ordered = sorted(channel.held)
        before = [i for i in ordered if channel.complete_from <= i < trigger_id]
        if len(before) < limit and channel.complete_from != FROM_THE_START:
            return None
        self._channels.move_to_end(channel_id)
        held = dict(channel.held)
        return Window(
            before=[held[i] for i in before[-limit:]] if limit else [],
            after=[held[i] for i in ordered if i > trigger_id],
            complete_from=channel.complete_from,
            held=held,
        )

    def known(self, channel_id: int, message_id: int) -> tuple[bool, Any | None]:
        """Whether memory knows this message of the channel as Discord has it now, and the
        message (None, if known: it was deleted). For a message found without a window, such
        as a thread's starter in its parent channel."""
        channel = self._channels.get(channel_id)
        if channel is None or channel.unechoed or message_id < channel.complete_from:
            return False, None
        return True, channel.held.get(message_id)

    def reading(self, channel_id: int) -> Reading:
        """Call before a REST history read: what `read` checks the channel against."""
        channel = self._channels.get(channel_id)
        return Reading(channel_id, channel, 0 if channel is None else channel.changes)

    def read(self, reading: Reading, trigger_id: int, limit: int, messages: list[Any]) -> None:
        """`messages` (newest first or in any order) are what REST answered for the `limit`
        messages before the trigger: keep them, unless memory changed while they were read."""
        channel = self._channels.get(reading.channel_id)
        if channel is None or channel is not reading.channel or channel.changes != reading.changes:
            return
        if trigger_id < channel.complete_from:
            return  # the read ends before memory begins: a gap stays between them
        start = FROM_THE_START if len(messages) < limit else min(m.id for m in messages)
        for message in messages:  # the same as memory's copy: no edit came while it was read
            channel.held.setdefault(message.id, message)
        channel.complete_from = min(channel.complete_from, start)
        self._trim(channel)

    # -- bounds -------------------------------------------------------------------------------

    def _begin(self, channel_id: int, first_id: int) -> _Channel:
        """Hold the channel from its message `first_id` on (or from a floor after it)."""
        floor = self._floors.pop(channel_id, FROM_THE_START)
        channel = self._channels[channel_id] = _Channel(complete_from=max(first_id, floor))
        self._forget_the_oldest()
        return channel

    def _keep(self, channel: _Channel, message: Any) -> None:
        if message.id < channel.complete_from:
            return  # before what memory holds whole: a gap may stand between them
        channel.held[message.id] = message
        due = channel.unechoed.get(message.id)
        content = message.content or ""
        if due and content in due:
            del due[: due.index(content) + 1]  # that write's echo, and those before it
            if not due:
                del channel.unechoed[message.id]
            self._update_echoed(channel)
        self._trim(channel)

    def _trim(self, channel: _Channel) -> None:
        if len(channel.held) <= self._per_channel:
            return
        ordered = sorted(channel.held)
        dropped = ordered[: len(ordered) - self._per_channel]
        for message_id in dropped:
            del channel.held[message_id]
            channel.unechoed.pop(message_id, None)  # no longer shown: its echo does not matter
        channel.complete_from = max(channel.complete_from, dropped[-1] + 1)
        self._update_echoed(channel)

    def _forget_the_oldest(self) -> None:
        while len(self._channels) > self._max_channels:
            channel_id = next(iter(self._channels))
            self.forget(channel_id)

    @staticmethod
    def _update_echoed(channel: _Channel) -> None:
        if channel.unechoed:
            channel.echoed.clear()
        else:
            channel.echoed.set()
