"""What every turn of one runtime is played with: the stores, the tools, the model health.

The cog and the console each build one `Stage` once their database and locks are open, and
every turn reads it; nothing on it is "not started yet". Its few methods are the parts of a
turn that touch those stores: some must fail softly (a turn never fails because the store could
not say who posted a message, or could not record it), and the reads a turn cannot go on
without wait out a blip of the database (`read`) rather than fail a message already admitted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from tomori.cast.personas import Persona, PersonaStore
from tomori.config.settings import Settings
from tomori.generation.health import ModelHealth
from tomori.generation.results import StreamStatus, TurnOutcome
from tomori.generation.state import TurnState
from tomori.locks import ChannelLocks
from tomori.memory.scopes import Place
from tomori.memory.store import MemoryStore
from tomori.memory.tools import TurnMemories
from tomori.monitoring.metrics import Metrics
from tomori.monitoring.why import FateSink
from tomori.policy.limit_store import UserLimitStore
from tomori.policy.limits import BotTurns
from tomori.policy.turn_budget import TurnBudget
from tomori.store.retry import until_not_busy
from tomori.tools.registry import ToolRegistry
from tomori.tools.switches import BotTools, ToolSwitch, ToolSwitchStore
from tomori.turns.config import ChannelConfig, TurnConfig
from tomori.turns.summaries import Summaries, Where
from tomori.turns.surface import Context, Reading

log = logging.getLogger(__name__)

BLIP_PATIENCE_S = 10.0
"""How long a turn waits for the database to read what it needs, or to take which persona
posted its messages: a blip (a busy SQLite past its busy timeout, a PostgreSQL connection cut or
failing over), not an outage."""


@dataclass(frozen=True, slots=True, eq=False)
class Stage:
    """Everything a turn runs with beyond its channel (see the module docstring)."""

    settings: Settings
    locks: ChannelLocks
    config: ChannelConfig
    tools: BotTools
    switches: ToolSwitchStore
    personas: PersonaStore
    metrics: Metrics
    health: ModelHealth | None
    """The models turns skip for now (None: the console, which asks each model every turn)."""
    drawn_in: BotTurns
    """Personas drawn in by another's answer, per channel since a human last spoke there."""
    limits: UserLimitStore
    """Each member's tokens today, which a turn's budget starts from."""
    why: FateSink | None = None
    """Where each turn reports what became of its message (None: the console keeps none)."""
    memories: MemoryStore | None = None
    """The memories turns see and save (None: `TOMORI_MEMORIES=0`)."""
    summaries: Summaries | None = None
    """The channel summaries turns are shown and ask folds of (None: `TOMORI_SUMMARIES=0`)."""

    def fold(self, where: Where, reading: Reading, config: TurnConfig) -> None:
        """Ask for a fold of what fell out of `reading`'s window, in the background. A turn
        asks once its answers are written: a fold started beside them would share the
        process's loop with them (its Discord read, its model's request), and a summary
        folded meanwhile is the next turn's to see anyway (`bench/summary_bench.py`)."""
        if self.summaries is None:
            return
        earlier = reading.fallen_out()
        if earlier is not None:
            self.summaries.fold_later(where, earlier, config.entries, config.providers)

    async def summary(self, where: Where) -> Context:
        """The note on the channel's summary, shown before its history. None if the database
        cannot say now (logged: the turn goes on without it)."""
        if self.summaries is None:
            return ()
        try:
            return await self.summaries.note(where.guild_id, where.channel_id)
        except Exception as error:
            if not self.limits.is_database_error(error):
                raise
            log.warning("channel %s: could not read its summary: %r", where.channel_id, error)
            return ()

    def memories_at(
        self, guild_id: str | None, channel_id: str, member_id: str | None, *, shared: bool
    ) -> TurnMemories | None:
        """What a turn answering `member_id` here does with memories (`shared`: everyone in
        the server may read the channel); None: memories are off, or no member asked (nothing
        is remembered of no one)."""
        if self.memories is None or member_id is None:
            return None
        place = Place(guild_id, channel_id, member_id, shared=shared)
        return TurnMemories(self.memories, place, self.settings.memories_per_turn)

    async def tools_for(self, guild_id: str | None, channel_id: str) -> ToolRegistry:
        """The tools offered in this channel's turn, less those an admin turned off here (read
        afresh: a change applies from the next turn)."""
        switches: tuple[ToolSwitch, ...] = ()
        if guild_id is not None:
            where = guild_id, channel_id
            switches = await self.read(
                f"the tool switches of channel {channel_id}", lambda: self.switches.read(*where)
            )
        return await self.tools.for_turn(switches, guild_id)

    async def read[T](self, what: str, read: Callable[[], Awaitable[T]]) -> T:
        """`read`'s result, read again while the database fails it for a reason that passes,
        for `BLIP_PATIENCE_S`: a connection cut mid-read fails no message (the read has no
        effect to repeat). Past it, or on an error that does not pass, the error is raised and
        the turn's asker told. `what` names it for the log ("the settings of channel 7")."""
        patience = time.monotonic() + BLIP_PATIENCE_S
        return await until_not_busy(
            f"reading {what}",
            read,
            self.personas.is_transient,  # every store here is on the one database
            keep_trying=lambda: time.monotonic() < patience,
        )

    async def budget(
        self, guild_id: str | None, scope: str, requester_id: str | None
    ) -> TurnBudget | None:
        """What a turn in `guild_id` (None: a direct message) may spend of its asker's day,
        counted in `scope`; None when no daily token limit holds there, or the store cannot
        say now (logged: the turn goes on unbounded, as admission does then)."""
        if requester_id is None:
            return None
        limits = await self.config.user_limits(guild_id)
        if not limits.counts_tokens:
            return None
        await self.metrics.flushed()  # the turns before this one recorded their tokens
        try:
            return await self.limits.turn_budget(scope, requester_id, limits)
        except Exception as error:
            if not self.limits.is_database_error(error):
                raise
            log.warning(
                "could not read the tokens of user %s in %s (%r); this turn is not held to them",
                requester_id,
                scope,
                error,
            )
            return None

    async def posters(self, message_ids: Sequence[str]) -> Mapping[str, str]:
        """Which persona posted each of these messages (none if the store cannot say: the
        history then shows them by the names the channel shows)."""
        if not message_ids:
            return {}
        try:
            return await self.personas.posters(message_ids)
        except Exception as error:
            log.warning("could not read who posted the history's messages: %r", error)
            return {}

    async def record_posted(
        self, guild_id: str, channel_id: str, persona: Persona, state: TurnState
    ) -> None:
        """Keep which messages the persona posted: a reply to one is answered by it, and the
        history shows the models who said what. A blip of the database (busy, or briefly out
        of reach) is waited out for `BLIP_PATIENCE_S`; past it the record is given up,
        logged (a reply to a webhook's message still finds its persona by the name shown)."""
        if not state.delivered:
            return
        ids = [m.message_id for m in state.delivered]
        patience = time.monotonic() + BLIP_PATIENCE_S
        try:
            await until_not_busy(
                f"recording {persona.name}'s messages {ids} in channel {channel_id}",
                lambda: self.personas.posted(guild_id, channel_id, persona, ids),
                self.personas.is_transient,
                keep_trying=lambda: time.monotonic() < patience,
            )
        except Exception as error:
            log.warning(
                "channel %s: could not record %s's messages %s: %r",
                channel_id,
                persona.name,
                ids,
                error,
            )

    def record_unasked(self, state: TurnState, status: StreamStatus) -> None:
        """A turn that ended before any model was asked still counts in the metrics."""
        self.metrics.record_outcome(TurnOutcome(state.guild_id, state.channel_id, None, status))
