"""One turn, from its lock to its last message: written once, run by the cog and the console.

`play` is what a channel lock runs for a turn. Before any model is asked it prepares: the
trigger (or, for a command's turn, the channel's latest message), whether the asker may still
be answered, the queue to leave out, a stop check, typing, the channel's configuration, its
tools, its personas, one read of the channel, and what stops ended there before it (told to
the model in a request-only note, `stopped.py`). Its reads of the database wait out a blip (a
connection cut mid-read: `Stage.read`), so an admitted message is not failed by one. A `/kill`
during that ends the turn quietly; a failure there (a Discord call that got no answer, the
database away past that patience) is told to whoever asked directly, as a failed generation
would be, since the chain's own notices never ran. Then the bot answers, or the personas the
trigger called (`cast.py`), or a scene's lines, each pass within what the asker's day has left
(`tomori.policy.turn_budget`): a turn that runs out says so once, after what it showed.
A direct trigger shows the turn's stage as it goes, and how it ended
(`tomori.delivery.progress`); where its server says so, failures are only logged. What became
of the turn's message (each model's part, a stop, what was delivered) is reported to its
account as it goes (`tomori.monitoring.why`). A new take of an answer (`tomori.turns.takes`)
plays in the channel as that answer's turn saw it (`retake.py`), and `play` returns the one
answer a turn gave to one message, which can have takes. How each turn ended, how long it and
its first text took, and what stopped it go to the runtime's exporter (an operator's metrics).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass

from tomori.cast.personas import Persona
from tomori.delivery.notices import (
    GENERATION_ERROR,
    memory_forgotten,
    memory_saved,
    post_notice_safely,
)
from tomori.delivery.progress import LoggedNotices, ending
from tomori.delivery.progress import Stage as ProgressStage
from tomori.generation.answering import answer_turn
from tomori.generation.chain import ChainResult
from tomori.generation.results import StreamStatus
from tomori.generation.state import TurnState
from tomori.generation.stoppable import Stopped, until_stopped
from tomori.locks import KillReason, Turn, TurnGuard
from tomori.monitoring.why import (
    STOPS,
    Asked,
    Fate,
    MessageAccount,
    Step,
    Undelivered,
)
from tomori.policy.turn_budget import TurnBudget
from tomori.turn_log import note_outcome, turn_logged
from tomori.turns.ensemble import Playing
from tomori.turns.request import AnswerBrief, TurnRequest
from tomori.turns.retake import Retaking
from tomori.turns.stage import Stage
from tomori.turns.stopped import stopped_notices
from tomori.turns.summaries import Where
from tomori.turns.surface import BOT_VOICE, NOTHING_READ, Reading, Surface
from tomori.turns.takes import Answered, used

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Prepared:
    playing: Playing
    cast: tuple[Persona, ...]
    """The personas that answer, in order (none: the bot; a scene's come from the scene)."""
    budget: TurnBudget | None
    """What the turn may spend of its asker's day (None: no daily token limit holds)."""


async def play(stage: Stage, surface: Surface, turn: Turn, guard: TurnGuard) -> Answered | None:
    """Run `turn` in `surface`'s channel (see the module docstring); the answer it ended
    with, if that can have takes (`tomori.turns.takes`). Every line it logs, in any task it
    starts, is about this turn (`tomori.turn_log`)."""
    with turn_logged(turn.turn_id, surface.channel_id):
        return await _play(stage, surface, turn, guard)


async def _play(stage: Stage, surface: Surface, turn: Turn, guard: TurnGuard) -> Answered | None:
    request = TurnRequest.of(turn.trigger)
    if request.take is not None:
        surface = Retaking(surface, request.take)
    scene = request.scene
    state = TurnState(
        surface.channel_id,
        notices=surface.notices,
        trigger_message_id=None if scene or request.respond else turn.trigger.message_id,
        from_queue=turn.from_queue,
        scene_turn=scene is not None,
        metrics=stage.metrics,
        guild_id=surface.limit_scope,
        confirmer=surface,
    )
    account = None
    if stage.why is not None and state.trigger_message_id is not None:
        asked = Asked(state.trigger_message_id, surface.channel_id, turn.trigger.requester_id)
        state.account = account = MessageAccount(asked, stage.why)
    if scene is not None and (surface.guild_id is None or not surface.deliverable()):
        return None  # scenes are played in a server's channels the bot may post in
    began = time.monotonic()
    exporter = stage.metrics.exporter
    exporter.turn_waited(time.time() - turn.trigger.received_at)
    await _shown_on_trigger(stage, surface, turn, state, request)
    try:
        return await _played(stage, surface, turn, guard, state, request, account)
    finally:
        reason = guard.stop_reason()
        stopped = guard.stop_requested() or reason is not None
        failed = state.failed or state.undelivered
        replaced = reason is KillReason.FOLLOW_UP
        ended = ending(stopped=stopped, failed=failed, replaced=replaced)
        state.progress.report(ended)
        landed = state.first_landed_at
        first_text_s = None if landed is None else landed - began
        exporter.turn_ended(ended, time.monotonic() - began, first_text_s)
        if reason is not None:
            exporter.killed(reason)


async def _shown_on_trigger(
    stage: Stage, surface: Surface, turn: Turn, state: TurnState, request: TurnRequest
) -> None:
    """A direct trigger shows the turn's progress, and its server's errors setting decides
    whether a failure is told in the channel or only logged; an ambient trigger, a scene and a
    /respond (no message to mark) show nothing and tell as before. A new take of an answer is
    no new message: it marks nothing (its message shows how its first answer ended, and the
    take is seen being written), and its message's account stays that of the message (it has
    no `trigger_message_id`); the errors setting holds for it as for any direct turn, a
    failure it does not reply with being logged (there is no new message to react on)."""
    message_id = state.trigger_message_id
    if not request.surfaces_errors or (message_id is None and request.take is None):
        return
    visibility = await stage.config.visibility(surface.guild_id)
    if not visibility.replies:
        state.notices = LoggedNotices(surface.channel_id)
    if message_id is None:
        return
    state.progress = surface.progress(message_id, visibility.stages, from_queue=turn.from_queue)
    state.progress.report(ProgressStage.WORKING)


async def _played(
    stage: Stage,
    surface: Surface,
    turn: Turn,
    guard: TurnGuard,
    state: TurnState,
    request: TurnRequest,
    account: MessageAccount | None,
) -> Answered | None:
    async with AsyncExitStack() as typing:
        try:
            prepared = await _prepare(stage, surface, turn, guard, state, request, typing)
        except Stopped:
            note_outcome(StreamStatus.STOPPED_BY_USER)
            log.info("turn %s stopped before any model was asked", turn.turn_id)
            stage.record_unasked(state, StreamStatus.STOPPED_BY_USER)
            _stopped(account, guard)
            return None
        except Exception:
            state.failed = True
            note_outcome(StreamStatus.ERROR)
            stage.record_unasked(state, StreamStatus.ERROR)
            if account is not None:
                account.note(Step(Fate.FAILED))
            log.exception(
                "turn %s in channel %s failed before any model was asked",
                turn.turn_id,
                surface.channel_id,
            )
            if request.surfaces_errors:
                await state.post_notice(GENERATION_ERROR)
            return None
        if prepared is None:
            return None
        playing = prepared.playing
        try:
            result, answered = await _answer(prepared, state, request)
        finally:
            where = Where(surface.guild_id, surface.channel_id, surface.limit_scope)
            stage.fold(where, playing.reading, playing.config)
        await _saves_shown(playing)
        if prepared.budget is not None:
            await _told_if_spent(prepared.budget, state, turn, request.surfaces_errors)
    if account is not None:
        _stopped(account, guard)
        _delivered(account, state, result)
    return answered


async def _saves_shown(playing: Playing) -> None:
    """Every memory the turn saved (and kept), and every one it forgot, is told in the
    channel, after its answer, whatever the server's errors setting: neither is ever silent."""
    if playing.memories is None:
        return
    notices = [memory_saved(m.memory_id, m.text) for m in playing.memories.saved]
    notices += [memory_forgotten(memory_id) for memory_id in playing.memories.forgotten]
    for notice in notices:
        await post_notice_safely(playing.surface.notices, notice, playing.surface.channel_id)


def _stopped(account: MessageAccount | None, guard: TurnGuard) -> None:
    """Report who stopped the turn, if anyone did, to its message's account."""
    reason = guard.stop_reason() if guard.stop_requested() else None
    stopped_by = None if reason is None else STOPS.get(reason)
    if account is not None and stopped_by is not None:
        account.note(Step(Fate.STOPPED, outcome=stopped_by))


def _delivered(account: MessageAccount, state: TurnState, result: ChainResult | None) -> None:
    """Report what the answer delivered, and what kept the rest from the channel."""
    if state.delivered:
        account.note(Step(Fate.DELIVERED, count=len(state.delivered)))
    failure = None
    if result is not None and result.unreachable:
        failure = Undelivered.FORBIDDEN if result.forbidden else Undelivered.GONE
    elif state.undelivered:
        failure = Undelivered.CUT_SHORT
    if failure is not None:
        account.note(Step(Fate.UNDELIVERED, outcome=failure))


async def _answer(
    prepared: _Prepared, state: TurnState, request: TurnRequest
) -> tuple[ChainResult | None, Answered | None]:
    """The scene's lines, the personas' answers, or the bot's: how the bot's chain ended
    (None for a scene's or personas'), and the one answer it gave to one message, which can
    have takes (none for a scene's, a `/respond`'s, or several)."""
    playing = prepared.playing
    stage, surface, config = playing.stage, playing.surface, playing.config
    if request.scene is not None:
        await playing.play_scene(state, request.scene)
        return None, None
    respond = request.respond
    brief = respond.brief(config.prefill) if respond else AnswerBrief(channel=config.prefill)
    if prepared.cast and request.take is not None:  # that persona alone, drawing in none
        persona = prepared.cast[0]
        spoken = await playing.speak(state, persona, (), brief)
        usage = used(list(spoken.usage().values()))
        return None, Answered(persona.key, tuple(state.delivered), usage, _whole(spoken, state))
    if prepared.cast:
        answers = await playing.answer_as(state, prepared.cast, brief)
        if respond is not None or len(answers) != 1:
            return None, None
        [(persona, speaking, spoken)] = answers
        usage = used(list(spoken.usage().values()))
        return None, Answered(persona.key, tuple(speaking.delivered), usage)
    result = await answer_turn(
        playing.turn,
        playing.guard,
        state,
        surface.bot_port(),
        entries=config.entries,
        providers=config.providers,
        tools=playing.tools_of(None),
        settings=stage.settings,
        context=playing.shown(config.system_prompt, BOT_VOICE) + brief.said,
        request_notices=(*await playing.remembered(None), *playing.notices),
        surface_errors=request.surfaces_errors,
        health=stage.health,
        contexts=stage.config.contexts,
        prefill=brief.prefill_for(None, first=True),
    )
    if result.forbidden:
        surface.refused()
    if respond is not None:
        return result, None
    usage = used(list(result.usage().values()))
    return result, Answered(None, tuple(state.delivered), usage, _whole(result, state))


def _whole(result: ChainResult, state: TurnState) -> bool:
    """Whether the answer ended complete: its chain completed and every part reached the
    channel (a stall, a stop, a cut or a message Discord failed leaves a partial text, no
    take to keep)."""
    return (
        result.status is StreamStatus.COMPLETED and not state.undelivered and not state.lost_parts
    )


async def _told_if_spent(
    budget: TurnBudget, state: TurnState, turn: Turn, surface_errors: bool
) -> None:
    """A turn its budget stopped says so once, after what it showed (which stays)."""
    refusal = budget.refusal
    if refusal is None:
        return
    log.info(
        "turn %s in channel %s stopped: the %s is spent (%d tokens in this turn)",
        turn.turn_id,
        state.channel_id,
        refusal.limit,
        budget.spent,
    )
    if surface_errors:
        await state.post_notice(refusal.notice)


def _asked_in(reading: Reading, request: TurnRequest, message_id: str | None) -> str:
    """The words the turn was asked in: its message as shown, or a /respond's prompt."""
    if request.respond is not None:
        return request.respond.prompt or ""
    shown = None if message_id is None else reading.quoted(message_id)
    return shown or ""


async def _prepare(
    stage: Stage,
    surface: Surface,
    turn: Turn,
    guard: TurnGuard,
    state: TurnState,
    request: TurnRequest,
    typing: AsyncExitStack,
) -> _Prepared | None:
    """Everything the turn's answers need, read once; None if it is not to be answered."""
    message = None
    if request.respond is not None:  # a command's: it answers the channel as it stands
        message = await surface.latest()
    elif request.scene is None:
        message = await surface.trigger(turn)
        if message is None:
            log.warning("skipping turn %s: its message is gone", turn.turn_id)
            return None
        if not await surface.may_start(
            turn, message, guard, surface_errors=request.surfaces_errors
        ):
            return None
    channel_id = surface.channel_id
    waiting = await until_stopped(
        guard,
        stage.read(
            f"the queue of channel {channel_id}", lambda: stage.locks.queued_message_ids(channel_id)
        ),
    )
    if guard.stop_requested():  # /kill came while it waited: no typing, no read
        raise Stopped
    await typing.enter_async_context(surface.typing(state))  # reading files takes a while
    here = (surface.guild_id, channel_id)
    config = await until_stopped(
        guard,
        stage.read(f"the settings of channel {channel_id}", lambda: stage.config.for_turn(*here)),
    )
    tools = await until_stopped(guard, stage.tools_for(*here))
    asker = turn.trigger.requester_id
    budget = await until_stopped(guard, stage.budget(surface.guild_id, surface.limit_scope, asker))
    state.budget = budget
    everyone: tuple[Persona, ...] = ()
    keys = request.scene.cast if request.scene is not None else request.personas
    if keys and surface.guild_id is not None:
        guild_id = surface.guild_id
        everyone = await until_stopped(
            guard,
            stage.read(
                f"the personas of server {guild_id}", lambda: stage.personas.of_server(guild_id)
            ),
        )
    by_key = {persona.key: persona for persona in everyone}
    cast = tuple(by_key[key] for key in keys if key in by_key)  # those removed since are left out
    images = config.images or any(stage.config.for_persona(config, p).images for p in cast)
    reading: Reading = NOTHING_READ  # a command's turn in a channel with no message it can read
    if request.respond is None or message is not None:
        queued = turn.from_queue and message is not None
        reading = await until_stopped(
            guard, surface.read(message, waiting, queued=queued, images=images)
        )
    where = Where(surface.guild_id, channel_id, surface.limit_scope)
    summary = await until_stopped(guard, stage.summary(where))
    posters: Mapping[str, str] = {}
    if cast:
        posters = await until_stopped(guard, stage.posters(reading.posted_by_us()))
    stopped = stage.locks.stopped.of(surface.channel_id)  # read last: a stop may just have come
    playing = Playing(
        stage,
        surface,
        turn,
        guard,
        config,
        tools,
        reading,
        request.surfaces_errors,
        everyone,
        posters,
        stopped_notices(stopped, reading, turn.trigger.message_id),
        stage.memories_at(surface.guild_id, channel_id, asker, shared=surface.shared),
        _asked_in(reading, request, turn.trigger.message_id),
        summary,
    )
    return _Prepared(playing, () if request.scene is not None else cast, budget)
