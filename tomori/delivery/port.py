"""The protocols between the core and a channel: how streamed text and notices get posted.

The core never talks to a Discord library. The cog gives each pass a `StreamWriter` that owns
its own sending, so `stream_once` can stop reading from the provider at once while a send that
is already on the wire finishes and is accounted for.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

from tomori.errors import TomoriError


@dataclass(frozen=True, slots=True)
class DeliveredMessage:
    """A message the turn put in the channel, recorded before its send returned."""

    message_id: str
    text: str


def as_shown(content: str) -> str:
    """A message as its channel shows it: without the whitespace at its ends, which Discord
    trims from a message anyway (the console shows the same): a fallback's continuation, which
    begins with the space that joins it to the text before, begins its own message without it."""
    return content.strip()


class DeliveryError(TomoriError):
    """A channel did not take a message."""


class AnswerRecord(Protocol):
    """The turn as its writers see it: the channel, the message the first reply answers, the
    list of every message the turn delivered (which a writer appends to before its send
    returns), and the progress a successful send reports (it re-arms the pass's idle timer)."""

    channel_id: str
    delivered: list[DeliveredMessage]

    @property
    def reply_to(self) -> str | None: ...

    def report_progress(self) -> None: ...

    def reached_ceiling(self) -> None:
        """The writer cut the answer at its ceiling on its own time (edit mode's sends run
        apart from `feed`): the pass stops reading the model now, not at its next chunk."""
        ...

    def lost_a_part(self) -> None:
        """A message of the answer did not land (Discord failed it, asked twice): the rest
        goes on, but what the channel shows is not the whole answer."""
        ...


class StreamWriter(Protocol):
    """Delivers one pass's text; every successful send is reported as progress."""

    def feed(self, text: str) -> None:
        """Accept text from the model. Sends happen in the writer's own time, never here.

        Raises `DestinationUnreachable` once the channel is known to be gone.
        """
        ...

    def cut(self) -> None:
        """The answer ends here though the model went on: `finish` ends it with a note saying so.

        Called when a pass read more than one answer may hold; the note goes on the answer's
        last message, or alone when that one is already sent, if anything was shown at all.
        """
        ...

    async def finish(self) -> None:
        """Deliver everything fed so far and wait until it is in the channel."""
        ...

    async def settle(self) -> None:
        """The model's stream stopped before its end (it stalled, or its connection dropped):
        deliver what it wrote up to its last complete line, drop the unfinished line (edit
        mode, which may show part of it already, ends it at a whole word instead), and wait
        until that and any send already on the wire are in the channel.

        One rule for every early end, so the channel never shows a message cut mid-word
        (the fallback model goes on from what the channel shows).
        """
        ...

    def abandon(self) -> None:
        """Drop what is not sent yet; a send already on the wire completes on its own."""
        ...

    @property
    def delivered_text(self) -> str:
        """All text this writer got into the channel."""
        ...

    @property
    def sprites(self) -> tuple[str, ...]:
        """Images this writer posted, in order."""
        ...

    async def aclose(self) -> None:
        """Stop for good once the pass is over: nothing more is sent, what is on the wire lands."""
        ...


class DestinationUnreachable(DeliveryError):
    """The channel is gone or the bot may not post there: every model would fail the same way.

    `forbidden`: Discord refused the post (403), which will likely hold for a while; a channel
    that is gone (404) may have been a thread that is archived or a lookup that raced.
    """

    def __init__(self, reason: str, *, forbidden: bool = False) -> None:
        super().__init__(reason)
        self.forbidden = forbidden


class AnswerCut(TomoriError):
    """The answer filled as many messages as one answer may: the pass stops reading.

    Raised by `StreamWriter.feed` once the writer has ended the last message with a note that
    the answer was cut; what is queued still goes out on `finish`.
    """


class DeliveryRateLimited(DeliveryError):
    """Discord answered 429 even after the library's own retries."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"rate limited for {retry_after_s:.2f}s")
        self.retry_after_s = retry_after_s


class DeliveryFailed(DeliveryError):
    """One message could not be delivered for a reason that does not doom the next."""


class Urgency(IntEnum):
    """How soon a request to Discord should go out when the bot's requests must wait their
    turn: lower goes sooner. A user waits on the first text of a turn far more than on the
    refresh of text already shown, so the request budget serves them in this order.

    A history read comes first: it is the first request of a turn that has shown nothing yet,
    and the turn's model cannot start before it lands, so turns start in the order they came.
    Behind the first texts, 200 turns in channels that held messages before the bot connected
    had their models start up to 8 s late, and their first texts (p99) came at 12 s rather than
    9 s. Behind the refreshes, every new turn waited until the answers already flowing had
    finished."""

    READ = 0
    """A read of the channel's history or of a message: a turn waits on it to begin."""
    FIRST = 1
    """A turn's first visible text, and notices: until it lands the user sees nothing."""
    LAST = 2
    """The last text of an answer (its final send or edit): the answer is not whole without it."""
    MORE = 3
    """An intermediate flush or edit. These coalesce: the writer composes the newest text only
    once it may send, so a late one carries everything that came meanwhile."""
    TYPING = 4
    """The typing indicator, shown while nothing else is: sent only when no request waits."""
    REACTION = 5
    """A progress mark on a trigger (`tomori.delivery.progress`), last of all. Typing never
    queues (it goes only when nothing waits), so the order between the two decides little;
    what matters is that a mark queues behind every text and, like `MORE`, waits out a
    backlog: a mark says the bot is at work, which its answer's text says better. It must
    queue rather than be dropped, as typing is: a mark shown has to be taken down."""
    TIDY = 6
    """A component tidy-up (an ended answer's Stop button taken away): after every other
    request, a progress mark's too, and never in a place a text would take
    (`DiscordPacing.tidy`)."""


class ChannelPort(Protocol):
    """The calls the writer makes on a channel; mentions are never allowed to ping.

    The writer awaits `writable` before each send or edit and composes the text only then, so
    text that comes while the channel may not be written to goes out together, in as few
    requests as possible.
    """

    async def writable(self, urgency: Urgency) -> None:
        """Return once one request of `urgency` may be sent on this channel now (the bot's
        request budget and the channel's rate-limit bucket allow it), reserved for the port's
        next `send` or `edit`."""
        ...

    async def send(self, content: str, *, reply_to: str | None, urgency: Urgency) -> str:
        """Post a message (as a reply to `reply_to` if given); return its ID."""
        ...

    async def edit(self, message_id: str, content: str, *, urgency: Urgency) -> None:
        """Replace the text of a message this port sent."""
        ...
