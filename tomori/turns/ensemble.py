"""Personas answering a turn: each in turn, a scene's lines, and the next speaker's state.

Every persona of a turn answers under the one channel lock the turn holds. Each sees the channel
as the turn read it once (`Reading`), then what the personas before it said in the turn
(`heard`); its messages go through its own port (`Surface.speaker`), and which messages it
posted is recorded, so a reply to one is answered by it. An answer that names another persona
draws it in, while the channel's budget of drawn-in answers allows (`TOMORI_MAX_BOT_TURNS`,
reset when a human speaks there). A scene is a fixed order of lines instead, each told whose
line it is; a line that fails ends the scene. No persona speaks once a /kill came or the
asker's daily tokens ran out (the turn says so).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tomori.cast.personas import Persona, drawn_in
from tomori.cast.scenes import Scene, heard, speaker_notice
from tomori.generation.answering import answer_turn
from tomori.generation.chain import ChainResult
from tomori.generation.results import StreamStatus
from tomori.generation.state import TurnState
from tomori.locks import Turn, TurnGuard
from tomori.memory.tools import NAMES as MEMORY_TOOLS
from tomori.memory.tools import TurnMemories
from tomori.tools.registry import ToolRegistry
from tomori.turns.config import TurnConfig
from tomori.turns.request import SCENE_LINE, AnswerBrief
from tomori.turns.stage import Stage
from tomori.turns.surface import Context, Reading, Surface, Voice

log = logging.getLogger(__name__)

Spoken = tuple[Persona, TurnState, ChainResult]
"""A persona's answer in a turn: the persona, the state it spoke in, how it ended."""


@dataclass(frozen=True, slots=True, eq=False)
class Playing:
    """One turn as its personas play it: where, with what, and what they were shown."""

    stage: Stage
    surface: Surface
    turn: Turn
    guard: TurnGuard
    config: TurnConfig
    tools: ToolRegistry
    reading: Reading
    surface_errors: bool
    everyone: tuple[Persona, ...]
    """The server's personas, as the turn began."""
    posters: Mapping[str, str]
    """By message ID, the persona that posted each of the cog's messages shown."""
    stopped: Context = ()
    """The note on the answers stops ended before the turn (`tomori.turns.stopped`)."""
    memories: TurnMemories | None = None
    """The turn's memories (None: memories are off, or no member asked)."""
    asked: str = ""
    """The words the turn was asked in, which find its relevant memories."""
    summary: Context = ()
    """The note on the channel's summary (`tomori.summary`), shown before the history."""

    @property
    def notices(self) -> Context:
        """What every request of the turn is told beyond the messages: of their files, and of
        the answers stopped before it."""
        return (*self.reading.notices, *self.stopped)

    def shown(self, system_prompt: str, voice: Voice) -> Context:
        """The system prompt, the channel's summary, then each message as `voice` sees it."""
        system, *messages = self.reading.context(system_prompt, voice)
        return (system, *self.summary, *messages)

    def tools_of(self, persona: str | None) -> ToolRegistry:
        """The tools `persona` (None: the bot) is offered: the turn's, its memory tools bound
        to where it speaks (none where the turn has no memories)."""
        bound = () if self.memories is None else self.memories.tools(persona)
        return self.tools.with_bound(bound, MEMORY_TOOLS)

    async def remembered(self, persona: str | None) -> Context:
        """The note on what `persona` (None: the bot) remembers here; none if the database
        cannot say now (logged: the turn goes on without them)."""
        if self.memories is None:
            return ()
        try:
            return await self.memories.note(persona, self.asked)
        except Exception as error:
            if not self.stage.limits.is_database_error(error):
                raise
            log.warning("channel %s: could not read memories: %r", self.surface.channel_id, error)
            return ()

    def goes_on(self, state: TurnState) -> bool:
        """Whether another persona may speak: no /kill came, and the asker's tokens last."""
        return not self.guard.stop_requested() and state.allows_pass()

    def voice(self, persona: Persona) -> Voice:
        return Voice(persona.key, self.posters, {p.key: p.name for p in self.everyone})

    async def speak(
        self,
        state: TurnState,
        persona: Persona,
        said: Sequence[tuple[Persona, str]],
        brief: AnswerBrief,
        *,
        notices: Context = (),
    ) -> ChainResult:
        """One persona's answer: one pass of its chain with the whole contract, posted under
        its name; it sees the channel, what a `/respond` asked (in `brief`), then what was
        said before it in the turn. `notices` go in its request only; the answer begins with
        the prefill `brief` gives it (`AnswerBrief.prefill_for`)."""
        own = self.stage.config.for_persona(self.config, persona)
        context = self.shown(own.system_prompt, self.voice(persona))
        context += brief.said
        context += heard(said, persona)
        prefill = brief.prefill_for(persona, first=not said)
        speaker = self.surface.speaker(persona)
        remembered = await self.remembered(persona.key)
        try:
            result = await answer_turn(
                self.turn,
                self.guard,
                state,
                speaker.port,
                entries=own.entries,
                providers=own.providers,
                tools=self.tools_of(persona.key),
                settings=self.stage.settings,
                context=context,
                request_notices=(*remembered, *self.notices, *notices),
                surface_errors=self.surface_errors,
                health=self.stage.health,
                contexts=self.stage.config.contexts,
                wardrobe=speaker.wardrobe,
                prefill=prefill,
            )
        finally:
            guild_id = self.surface.guild_id or ""
            await self.stage.record_posted(guild_id, self.surface.channel_id, persona, state)
        if result.forbidden:
            self.surface.refused()
        return result

    async def answer_as(
        self, state: TurnState, cast: Sequence[Persona], brief: AnswerBrief
    ) -> list[Spoken]:
        """Each persona of `cast` answers in turn, drawing in those its answer names (see the
        module docstring). Each answer begins with its persona's prefill, else the channel's,
        but for a `/respond` one, which is the first answer's alone. Returns who spoke, with
        the state each spoke in and how it ended, in order."""
        channel = self.surface.channel_id
        waiting = deque(cast)
        said: list[tuple[Persona, str]] = []
        spoken: list[Spoken] = []
        while waiting and self.goes_on(state):
            persona = waiting.popleft()
            speaking = state if not said else next_speaker(state)
            result = await self.speak(speaking, persona, said, brief)
            spoken.append((persona, speaking, result))
            if result.unreachable:
                return spoken
            said.append((persona, result.text))
            drawn = drawn_in(self.everyone, result.text, persona)
            budget = self.stage.drawn_in
            if drawn is not None and drawn not in waiting and budget.allows(channel):
                budget.started(channel)
                waiting.append(drawn)
        return spoken

    async def play_scene(self, state: TurnState, scene: Scene) -> None:
        """The scene's lines, each persona in turn for each cycle: each line stands free (no
        reply) and begins with the persona's own prefill, never the channel's (`SCENE_LINE`);
        /kill ends the line being written and the rest, the
        asker's tokens running out the rest; a line that fails (its notice says why) ends the
        scene."""
        by_key = {persona.key: persona for persona in self.everyone}
        names = {persona.key: persona.name for persona in self.everyone}
        said: list[tuple[Persona, str]] = []
        speaking = state
        for cycle, key in scene.lines():
            if not self.goes_on(state):
                return
            persona = by_key.get(key)
            if persona is None:  # removed since the scene was asked for
                continue
            self.guard.touch()
            notice = speaker_notice(scene, persona, cycle, names)
            result = await self.speak(speaking, persona, said, SCENE_LINE, notices=(notice,))
            if result.status is not StreamStatus.COMPLETED or not result.text.strip():
                log.info("scene %s ends at %s's line: %s", self.turn.turn_id, key, result.status)
                return
            said.append((persona, result.text))
            speaking = next_speaker(state)


def next_speaker(state: TurnState) -> TurnState:
    """The state of a persona after the first: its own messages and notices; it stands free
    (the first one's answer already shows what it answers)."""
    return replace(
        state,
        from_queue=False,
        suppress_user_errors=False,
        on_stream_progress=None,
        on_ceiling=None,
        delivered=[],
        on_first_message=None,
        undelivered=False,
        lost_parts=False,
    )
