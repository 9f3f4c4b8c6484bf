"""The channel a turn runs in, as the turn sees it: the one seam between the turn and a place.

The turn (`tomori.turns.turn`) is written once against `Surface`; the cog implements it over a
Discord channel and the console over its terminal, so a rehearsal in the console runs the very
code a channel runs. A surface reads what the model is shown (`Reading`), gives the ports the
bot and each persona post through, shows typing, and says what became of its sends. Rules live
in the turn, not here: a surface only answers questions about its place.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from tomori.cast.personas import Persona
from tomori.delivery.notices import NoticeSink
from tomori.delivery.port import ChannelPort
from tomori.delivery.progress import ProgressHook, Stage
from tomori.delivery.sprite_markers import Wardrobe
from tomori.generation.state import TurnState
from tomori.locks import Turn, TurnGuard
from tomori.providers.base import ContextItem, Role
from tomori.tools.confirmation import ToolAsk, Verdict
from tomori.turns.summaries import Earlier

Context = tuple[ContextItem, ...]


@dataclass(frozen=True)
class Voice:
    """Who answers the turn, and who posted the cog's own messages: a persona's messages are
    the assistant's turns to that persona, and a named speaker's to anyone else (the bot's too,
    once a persona answers)."""

    persona: str | None = None
    """The name key of the persona that answers; None: the bot."""
    posters: Mapping[str, str] = field(default_factory=dict)
    """By message ID, the name key of the persona that posted it."""
    names: Mapping[str, str] = field(default_factory=dict)
    """By name key, the persona's name as shown."""


BOT_VOICE = Voice()


class Reading(Protocol):
    """What a turn read of its channel once, whoever answers it."""

    @property
    def notices(self) -> Context:
        """Request-only notices on what of the messages' files the model is not shown."""
        ...

    def posted_by_us(self) -> Sequence[str]:
        """The IDs of the messages shown that the bot or its webhooks posted: which persona
        posted each decides how a persona sees them."""
        ...

    def context(self, system_prompt: str, voice: Voice) -> Context:
        """The system prompt, then each message shown as `voice` sees it."""
        ...

    def quoted(self, message_id: str) -> str | None:
        """The message `message_id` as the model is shown it (its speaker named first), if
        the reading shows it: how a note for the model names a message."""
        ...

    def fallen_out(self) -> Earlier | None:
        """How to read what fell out of the history window, for the channel summary (None:
        the window held the whole channel, or this place keeps no summary)."""
        ...


class _NothingRead:
    """A reading of a channel with no message to show: the system prompt alone."""

    @property
    def notices(self) -> Context:
        return ()

    def posted_by_us(self) -> Sequence[str]:
        return ()

    def context(self, system_prompt: str, voice: Voice) -> Context:
        return (ContextItem(Role.SYSTEM, system_prompt),)

    def quoted(self, message_id: str) -> str | None:
        return None

    def fallen_out(self) -> Earlier | None:
        return None


NOTHING_READ: Reading = _NothingRead()


@dataclass(frozen=True, slots=True)
class Speaker:
    """Where one persona's answer goes: its port, and the sprites its markers switch."""

    port: ChannelPort
    wardrobe: Wardrobe | None = None


class Surface(Protocol):
    """One channel, as a turn sees it (see the module docstring)."""

    @property
    def channel_id(self) -> str: ...

    @property
    def guild_id(self) -> str | None:
        """The server the channel is in; None in a direct message."""
        ...

    @property
    def limit_scope(self) -> str:
        """Where the turn's tokens and outcome count (a server, or direct messages)."""
        ...

    @property
    def shared(self) -> bool:
        """Whether everyone in the server may read the channel (a direct message: yes): what
        is remembered in one only some can read would be shown where everyone reads."""
        ...

    @property
    def notices(self) -> NoticeSink: ...

    async def trigger(self, turn: Turn) -> Any | None:
        """The message that asked for the turn; None if it is gone."""
        ...

    async def latest(self) -> Any | None:
        """The channel's newest message, where a turn no message asked for reads up to."""
        ...

    async def may_start(
        self, turn: Turn, message: Any, guard: TurnGuard, *, surface_errors: bool
    ) -> bool:
        """Whether the turn may still ask a model (the channel takes the bot's messages, the
        asker's tokens are not spent); its asker is told why not where `surface_errors`."""
        ...

    def deliverable(self) -> bool:
        """Whether the bot may post here (a channel that refused a send is skipped a while)."""
        ...

    def refused(self) -> None:
        """The place refused the bot's messages: later turns skip it for a while."""
        ...

    def typing(self, state: TurnState) -> AbstractAsyncContextManager[None]:
        """Show the bot at work until the turn shows something."""
        ...

    async def read(
        self,
        message: Any | None,
        waiting: Collection[str],
        *,
        queued: bool,
        images: bool,
        before: str | None = None,
    ) -> Reading:
        """What the model is shown of the channel up to `message` (None: up to now), the
        messages `waiting` in the queue left out; `queued`: the turn waited, and the answers
        since its message are shown too, those posted before message `before` alone if given
        (a new take's: what its answer's first take was shown); `images`: a model of the turn
        is sent images."""
        ...

    async def confirm(self, ask: ToolAsk) -> Verdict:
        """Ask the turn's asker to allow a tool call, and wait (`tomori.tools.confirmation`)."""
        ...

    def progress(
        self, message_id: str, visible: frozenset[Stage], *, from_queue: bool
    ) -> ProgressHook:
        """Where the turn of message `message_id` reports its stage, shown as `visible` says
        (`tomori.delivery.progress`); the same hook its queued stage went to, if this place
        reported that; `from_queue`: it waited in the queue, maybe showing the queued mark."""
        ...

    def bot_port(self) -> ChannelPort: ...

    def speaker(self, persona: Persona) -> Speaker: ...
