"""The memory of recent messages against a model of Discord, under any order of events: whenever
memory offers a window, it is exactly what a history read from Discord would answer at that
moment; never a deleted message, an old version, or a gap. REST reads may overlap the events,
as they do when the gateway keeps talking while a read is on the wire, and the gateway echoes
the cog's own sends and edits whenever it gets to them."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tomori_cog.reading.memory import Reading, RecentMessages

CHANNEL_ID = 7
LIMIT = 3


@dataclass(frozen=True)
class Channel:
    id: int


@dataclass(frozen=True)
class Message:
    """What memory reads of a library message: its ID, channel and text."""

    id: int
    content: str
    channel: Channel = Channel(CHANNEL_ID)


@dataclass
class Discord:
    """One channel as Discord keeps it, and the memory the gateway feeds."""

    memory: RecentMessages
    stored: dict[int, Message] = field(default_factory=dict)
    connected: bool = True
    reads: list[tuple[Reading, int, list[Message]]] = field(default_factory=list)
    echoes: list[tuple[str, Message]] = field(default_factory=list)
    """The bot's own sends and edits Discord answered but the gateway has not echoed yet."""
    ids: Any = field(default_factory=lambda: itertools.count(100))
    written: bool = False
    """Whether a message was ever sent in the channel (Discord then shows a last message)."""

    def history(self, before: int) -> list[Message]:
        """A REST read: the `LIMIT` messages before `before`, newest first."""
        older = sorted((i for i in self.stored if i < before), reverse=True)[:LIMIT]
        return [self.stored[i] for i in older]

    def create(self, text: str) -> None:
        self.echo_all()  # the gateway is one stream: the cog's echoes come first
        message = Message(next(self.ids), text)
        self.stored[message.id] = message
        self.written = True
        if self.connected:
            self.memory.seen(message)

    def edit(self, pick: int, text: str) -> None:
        self.echo_all()  # the gateway is one stream: the cog's echoes come first
        if not self.stored:
            return
        old = self.stored[sorted(self.stored)[pick % len(self.stored)]]
        new = Message(old.id, text)
        self.stored[old.id] = new
        if self.connected:
            self.memory.edited(CHANNEL_ID, old.id, lambda held: new)

    def delete(self, pick: int) -> None:
        self.echo_all()  # the gateway is one stream: the cog's echoes come first
        if not self.stored:
            return
        message_id = sorted(self.stored)[pick % len(self.stored)]
        del self.stored[message_id]
        if self.connected:
            self.memory.deleted(CHANNEL_ID, [message_id])

    def bot_send(self, text: str) -> None:
        """The cog posts a message: Discord answers, the gateway echoes it later."""
        message = Message(next(self.ids), text)
        self.stored[message.id] = message
        self.written = True
        self.echoes.append(("create", message))
        self.memory.wrote(CHANNEL_ID, message.id, text, new=True)

    def bot_edit(self, pick: int, text: str) -> None:
        """The cog edits one of its messages (any message, here): echoed later too."""
        if not self.stored:
            return
        message = Message(sorted(self.stored)[pick % len(self.stored)], text)
        self.stored[message.id] = message
        self.echoes.append(("edit", message))
        self.memory.wrote(CHANNEL_ID, message.id, text, new=False)

    def echo_all(self) -> None:
        while self.echoes and self.connected:
            self.echo()

    def echo(self) -> None:
        """The gateway delivers the oldest echo still due (once connected again, if not)."""
        if not self.echoes or not self.connected:
            return
        kind, message = self.echoes.pop(0)
        if kind == "create":
            self.memory.seen(message)
        elif message.id in self.stored:  # not deleted since
            self.memory.edited(CHANNEL_ID, message.id, lambda held: message)

    def disconnect(self) -> None:
        """Until `resume`, the gateway delivers nothing: what users do meanwhile is missed."""
        self.connected = False
        self.memory.forget_all()

    def resume(self) -> None:
        """Discord replays the echoes still due, then says the session resumed."""
        self.connected = True
        self.echo_all()
        self.memory.forget_all()

    def new_session(self) -> None:
        """The gateway starts over (nothing missed is replayed) and sends the channel whole:
        with no last message if none was ever sent in it."""
        self.connected = True
        self.echoes.clear()
        self.memory.forget_all()
        if not self.written:
            self.memory.never_written([CHANNEL_ID])

    def start_read(self) -> None:
        """A turn for the newest message starts reading the history over REST."""
        if self.stored:
            trigger = max(self.stored)
            reading = self.memory.reading(CHANNEL_ID)
            self.reads.append((reading, trigger, self.history(trigger)))

    def finish_read(self, pick: int) -> None:
        if self.reads:
            reading, trigger, answered = self.reads.pop(pick % len(self.reads))
            self.memory.read(reading, trigger, LIMIT, answered)

    def check(self) -> None:
        """Memory's window for any message's turn is what Discord would answer now, and so is
        any message memory says it knows."""
        for message_id in range(100, max(self.stored, default=100) + 2):
            known, message = self.memory.known(CHANNEL_ID, message_id)
            if known:
                assert message == self.stored.get(message_id)
        for trigger in self.stored:
            window = self.memory.window(CHANNEL_ID, trigger, LIMIT)
            if window is None:
                continue
            assert window.before == sorted(self.history(trigger), key=lambda m: m.id)
            assert window.after == [self.stored[i] for i in sorted(self.stored) if i > trigger]
            for message_id in range(window.complete_from, max(self.stored) + 1):
                if window.covers(message_id):
                    assert window.get(message_id) == self.stored.get(message_id)


texts = st.sampled_from(["a", "b", "c"])
picks = st.integers(0, 20)
creates = st.tuples(st.just("create"), texts)
reads = st.one_of(st.tuples(st.just("start_read")), st.tuples(st.just("finish_read"), picks))
events = st.one_of(
    creates,
    reads,
    st.tuples(st.just("edit"), picks, texts),
    st.tuples(st.just("delete"), picks),
    creates,
    reads,
    st.tuples(st.sampled_from(["disconnect", "resume", "new_session"])),
    st.tuples(st.just("bot_send"), texts),
    st.tuples(st.just("bot_edit"), picks, texts),
    st.tuples(st.just("echo")),
    st.tuples(st.just("echo")),
)


@example(  # a session starts before anything was said, then the channel is used
    [("new_session",), ("create", "a"), ("bot_send", "b"), ("edit", 0, "c"), ("echo",)],
    LIMIT + 1,
).via("the channel never written")
@example(  # a message older than memory is edited while a read brings its old version
    [
        *[("create", "a"), ("create", "b"), ("disconnect",), ("resume",), ("create", "c")],
        *[("start_read",), ("edit", 0, "b"), ("finish_read", 0)],
    ],
    2 * LIMIT,
).via("a race found by hand")
@example(  # an edit that changes nothing, then others: its late echo is not theirs
    [("create", "b"), *[("bot_edit", 0, text) for text in "bab"], ("echo",), ("echo",)],
    4,
).via("found by the property")
@example(  # the bot edits a message older than memory while a read brings its old version
    [
        *[("create", "a"), ("resume",), ("create", "a"), ("edit", 0, "b")],
        *[("start_read",), ("bot_edit", 0, "a"), ("finish_read", 0)],
    ],
    4,
).via("found by the property")
@example(  # while a read is on the wire, more messages come than memory keeps
    [("create", "a"), ("start_read",), *[("create", "b")] * (LIMIT + 2), ("finish_read", 0)],
    LIMIT + 1,
).via("a race found by hand")
@example(  # an edit that changes nothing forgets the channel while two sends are unechoed
    [("create", "a"), ("bot_send", "a"), ("bot_send", "a"), ("bot_edit", 0, "a"), ("echo",)],
    4,
).via("found by the property in CI")
@example(  # a late echo older than what memory holds whole must not fill a gap
    [
        *[("create", "a"), ("bot_send", "b"), ("disconnect",), ("resume",), ("create", "c")],
        *[("bot_send", "d"), ("create", "e"), ("create", "f"), ("create", "g")],
    ],
    4,
).via("written with the fix")
@settings(max_examples=800, deadline=None)
@given(st.lists(events, min_size=5, max_size=40), st.sampled_from([LIMIT + 1, 2 * LIMIT]))
def test_a_window_from_memory_is_always_what_discord_would_answer(
    steps: list[tuple[Any, ...]], per_channel: int
) -> None:
    discord = Discord(RecentMessages(per_channel=per_channel, channels=4))
    for name, *arguments in steps:
        getattr(discord, name)(*arguments)
        discord.check()


def test_memory_is_bounded_per_channel_and_forgets_the_channel_unused_longest() -> None:
    memory = RecentMessages(per_channel=4, channels=2)
    ids = itertools.count(1)
    for channel_id in (1, 2, 3):
        for _ in range(10):
            memory.seen(Message(next(ids), "x", Channel(channel_id)))
    assert memory.window(1, 10, 1) is None  # forgotten: the channel unused longest
    for channel_id, newest in ((2, 20), (3, 30)):
        window = memory.window(channel_id, newest, 3)
        assert window is not None
        assert [m.id for m in window.before] == [newest - 3, newest - 2, newest - 1]
        assert window.get(newest - 4) is None
        assert not window.covers(newest - 4)


def test_channels_never_written_fill_only_free_room_and_go_first() -> None:
    memory = RecentMessages(per_channel=4, channels=3)
    memory.seen(Message(5, "in use", Channel(1)))
    memory.never_written([2, 3, 4])  # room for two of them: channel 1 stays
    assert memory.window(1, 6, 0) is not None
    empty = memory.window(2, 9, 3)
    assert empty is not None
    assert empty.before == []
    assert empty.covers(1)
    assert memory.window(4, 9, 3) is None  # no room was left for it
    memory.seen(Message(10, "new", Channel(5)))  # channel 3, never used, is forgotten first
    assert memory.window(3, 9, 3) is None
    assert memory.window(1, 6, 0) is not None
    assert memory.window(2, 9, 3) is not None
