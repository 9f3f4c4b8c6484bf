"""What each message typed at the console does: a message becomes a turn request queued in the
channel's lock, a stop word stops the answer, `/scene`, `/tomori`, `/kill` and `/help` run.

`Dispatcher` owns the session's channel locks and the stage its turns are played on
(`tomori.turns.play`, as the cog plays one in a Discord channel), and keeps which messages
still wait for their answer: what Ctrl+C stops, and when the prompt shows again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from tomori.cast.personas import addressed
from tomori.config.settings import Settings
from tomori.console.channel import ConsoleChannel
from tomori.console.commands import (
    Verb,
    as_message,
    command_in,
    help_text,
    memory_request,
    respond_request,
    scene_request,
    tomori_action,
)
from tomori.console.commands import unknown as unknown_command
from tomori.console.history import USER_NAME, ConsoleMessage
from tomori.console.input import trimmed
from tomori.console.server import CHANNEL, HERE, SERVER, USER, ConsoleServer
from tomori.console.surface import ConsoleSurface, tell_held
from tomori.console.terminal import LineEditor
from tomori.delivery.notices import (
    GENERATION_ERROR,
    KILL_NOTHING_TO_STOP,
    KILL_STOPPED,
    NOT_ANSWERED,
    QUEUE_FULL,
    Notice,
)
from tomori.locks import Admission, ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.policy.admin import perform
from tomori.policy.interruptions import follow_up_key, is_stop_word
from tomori.policy.limit_store import UserLimitStore
from tomori.policy.limits import BotTurns
from tomori.policy.memories import own
from tomori.store import Database
from tomori.turns import Addressed, Stage, TurnRequest, play
from tomori.turns.commanded import respond_asked, scene_asked

log = logging.getLogger(__name__)


async def until_quit[T](quit: asyncio.Event, waiting: Coroutine[Any, Any, T]) -> T | None:
    """`waiting`'s result, or None (`waiting` cancelled) once `quit` is set."""
    task = asyncio.create_task(waiting)
    quitting = asyncio.create_task(quit.wait())
    try:
        await asyncio.wait({task, quitting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, quitting):
            pending.cancel()
        await asyncio.gather(task, quitting, return_exceptions=True)
    return task.result() if task.done() and not task.cancelled() else None


class Dispatcher:
    """The console channel's messages, each to what it asks (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        database: Database,
        channel: ConsoleChannel,
        server: ConsoleServer,
        editor: LineEditor,
        quit: asyncio.Event,
        *,
        live: bool,
    ) -> None:
        self._settings = settings
        self._channel = channel
        self._server = server
        self._surface = ConsoleSurface(
            channel, server, settings, draft=(lambda: editor.draft) if live else None
        )
        self._editor = editor
        """Live: the draft being typed, shown again with the prompt."""
        self._quit = quit
        self._live = live
        self._drawn_in = BotTurns.capped_at(settings.max_bot_turns)
        """Personas drawn in by another's answer since the person at the terminal last spoke."""
        # No one to tell of a /kill's clearing (`tell_cleared`): the console's one user is the
        # one who kills, and a kill's own queued messages are never told (they know).
        self.locks = ChannelLocks(
            lock_backend(database, settings), settings, self._run_turn, self._tell_expired
        )
        self._stage = Stage(
            settings,
            self.locks,
            server.config,
            server.tools,
            server.tool_switches,
            server.personas,
            server.metrics,
            None,
            self._drawn_in,
            UserLimitStore(database),
            memories=server.memories,
            summaries=server.summaries,
        )
        self._outstanding: set[str] = set()
        """The messages admitted whose answer has not ended: what Ctrl+C stops, if any."""
        self._running: str | None = None
        """The message whose turn is in `_run_turn`: what a /kill leaves of `_outstanding`."""
        self._killing = 0
        """Kills under way: the prompt waits for their notice."""

    @property
    def answering(self) -> bool:
        """Whether a message admitted still waits for its answer (what Ctrl+C would stop)."""
        return bool(self._outstanding)

    async def close(self) -> None:
        """Stop what still runs and clear the queue (as /kill does), then close the locks."""
        await self.locks.kill(self._channel.channel_id, requester_id=USER)
        await self.locks.close()

    async def handle(self, message: str, *, echo: bool = False) -> bool:
        """Send a message (`echo`: shown with its number, as it was typed unseen while an
        answer streamed), or run the command it is; False for /exit."""
        text = trimmed(message)
        if self._surface.answered(text):
            return True
        command = command_in(text)
        if command is None:
            if text:
                self._drawn_in.human_spoke(self._channel.channel_id)
            if is_stop_word(text, self._settings.stop_words):
                await self._stop_word(text, echo=echo)
            elif text:
                await self._submit(as_message(text), echo=echo)
        elif command.kind is Verb.EXIT and not command.rest:
            return False
        elif command.kind is Verb.KILL and not command.rest:
            await self.kill()
        elif command.kind is Verb.HELP and not command.rest:
            self._channel.say(help_text(self._settings.stop_words))
        elif command.kind is Verb.SCENE:
            await self._scene(text, command.rest, echo=echo)
        elif command.kind is Verb.RESPOND:
            await self._respond(text, command.rest, echo=echo)
        elif command.kind is Verb.MEMORY:
            await self._in_order()
            await self._memory(command.rest)
        elif command.kind is Verb.TOMORI:
            await self._in_order()
            action = tomori_action(command.rest)
            done = (
                action if isinstance(action, Notice) else await perform(action, self._server, HERE)
            )
            self._channel.tell(done)
        else:
            self._channel.say(unknown_command(command))
        self.prompt_if_idle()
        return True

    async def _in_order(self) -> None:
        """Piped, a script's command applies after the messages written before it (a setting
        to their answers, `/memory` to what they remembered)."""
        if not self._live:
            await until_quit(self._quit, self.locks.wait_idle(self._channel.channel_id))

    async def _memory(self, rest: str) -> None:
        """`/memory`: the person at the terminal's own memories, as the slash command's; an
        export is shown as the file's text."""
        asked = memory_request(rest)
        if isinstance(asked, Notice):
            self._channel.tell(asked)
            return
        answer = await own(self._server.memories, USER, *asked)
        self._channel.tell(answer.notice)
        if answer.file is not None:
            self._channel.say(answer.file[1].decode())

    async def _submit(self, text: str, *, echo: bool, posted: ConsoleMessage | None = None) -> None:
        """A message to the model (`posted`: already in the channel, its number taken).
        Piped, it waits to be sent while as many of the script's lines wait in the queue as one
        member may queue, as its author would: read at once, a script's fifth line was refused
        as full whenever the model was slower than the reading, yet each line is to be answered."""
        if posted is None and not self._live:
            channel_id = self._channel.channel_id
            await until_quit(self._quit, self.locks.wait_for_room(channel_id, USER))
            if self._quit.is_set():
                return
        message = posted or self._channel.post(text)
        message_id = self._channel.message_id(message)
        held = await self._server.admit(message_id)
        if echo or not self._live:  # piped, every message shows in its place
            self._channel.echo(message)
        if held is not None:
            tell_held(self._channel, held, message_id)
            return
        keys = [p.key for p in addressed(await self._server.personas.of_server(SERVER), text)]
        follows = None
        if self._live and await self._server.follow_ups():
            follows = follow_up_key(keys)
        request = TurnRequest(Addressed.DIRECTLY, tuple(keys))
        await self._queue(message, request, follow_up_key=follows)

    async def _stop_word(self, text: str, *, echo: bool) -> None:
        """A stop word (`TOMORI_STOP_WORDS`) stops the answer streaming and clears the queue,
        as it does for the user being answered in a channel, and, as a command, is shown to
        no model; with no answer under way it is an ordinary message."""
        message = self._channel.post(text)  # its number is taken as it is sent
        self._killing += 1  # the stopped turn's end prompts not: the stop's line comes first
        try:
            stopped = await self.locks.stop_for(self._channel.channel_id, USER)
        finally:
            self._killing -= 1
        if not stopped:
            await self._submit(as_message(text), echo=echo, posted=message)
            return
        message.command = True
        cleared = await self._left_in_queue()
        if echo or not self._live:
            self._channel.echo(message)
        said = f"(#{message.id} stopped the answer"
        if cleared:
            said += " and cleared " + ", ".join(f"#{number}" for number in sorted(cleared))
        self._channel.say(said + ")")

    async def _scene(self, text: str, rest: str, *, echo: bool) -> None:
        """`/scene`: checked as the slash command is, then queued as the channel's turn; the
        line typed stands in the channel (for its number) but no model is shown it."""
        if not self._live:  # a script's scene follows the answers to the lines before it
            await until_quit(self._quit, self.locks.wait_idle(self._channel.channel_id))
        request = scene_request(rest)
        if isinstance(request, Notice):
            self._channel.tell(request)
            return
        server = self._server
        asked = await scene_asked(server.config, server.personas, (SERVER, CHANNEL), *request)
        if isinstance(asked, Notice):
            self._channel.tell(asked)
            return
        message = self._channel.post(text, command=True)
        message_id = self._channel.message_id(message)
        held = await self._server.admit(message_id)  # a scene counts as one message of theirs
        if echo:
            self._channel.echo(message)
        if held is not None:
            tell_held(self._channel, held, message_id)
            return
        await self._queue(message, TurnRequest(Addressed.DIRECTLY, scene=asked.scene))

    async def _respond(self, text: str, rest: str, *, echo: bool) -> None:
        """`/respond`: checked as the slash command is, then queued as the channel's turn,
        which answers the channel as it stands; like `/scene`, the line typed stands in the
        channel for its number, and no model is shown it."""
        if not self._live:  # a script's /respond follows the answers to the lines before it
            await until_quit(self._quit, self.locks.wait_idle(self._channel.channel_id))
        options = respond_request(rest)
        if isinstance(options, Notice):
            self._channel.tell(options)
            return
        asked = await respond_asked(self._server.personas, SERVER, USER_NAME, *options)
        if isinstance(asked, Notice):
            self._channel.tell(asked)
            return
        message = self._channel.post(text, command=True)
        if echo:
            self._channel.echo(message)
        await self._queue(message, asked)

    async def _queue(
        self,
        message: ConsoleMessage,
        request: TurnRequest,
        *,
        follow_up_key: str | None = None,
    ) -> None:
        """The message's turn, started or queued behind the one running; a follow-up (see
        `Trigger.follow_up_key`) stops the running one and takes the place of the follow-ups
        queued before it."""
        message_id = self._channel.message_id(message)
        trigger = request.trigger(
            self._channel.channel_id, message_id, USER, follow_up_key=follow_up_key
        )
        self._outstanding.add(message_id)  # before: a turn that starts may end before submit
        admission = await self.locks.submit(trigger)
        if admission in (Admission.IGNORED, Admission.FAILED, Admission.QUEUE_FULL):
            self._outstanding.discard(message_id)
        if admission is Admission.IGNORED:
            self._channel.say(f"(#{message.id} is ignored: a /kill is still stopping the answer)")
        elif admission is Admission.FAILED:
            self._channel.tell(GENERATION_ERROR)
        elif admission is Admission.QUEUE_FULL:
            self._channel.tell(QUEUE_FULL, reply_to=message_id)
        elif admission is Admission.FOLLOW_UP:
            await self._left_in_queue()

    async def _left_in_queue(self) -> set[int]:
        """Forget the messages the queue dropped unanswered (a stop word clears it; a
        follow-up replaces the follow-ups before it), and return their numbers: they get no
        turn, so no turn's end would.

        Messages are admitted one at a time, so none joins the queue while it is read; one
        that leaves it meanwhile to start its turn is the one running, or has ended."""
        queued = set(await self.locks.queued_message_ids(self._channel.channel_id))
        kept = self._outstanding & (queued | self._running_now())
        dropped, self._outstanding = self._outstanding - kept, kept
        return {int(message_id) for message_id in dropped}

    def _running_now(self) -> set[str]:
        return set() if self._running is None else {self._running}

    def prompt_if_idle(self) -> None:
        if self._live and not self._outstanding and not self._killing:
            self._channel.prompt(self._editor.draft)

    async def kill(self) -> None:
        self._killing += 1  # the stopped turn's end prompts not: the kill's notice comes first
        try:
            outcome = await self.locks.kill(self._channel.channel_id, requester_id=USER)
        finally:
            self._killing -= 1
        notice: Notice = KILL_NOTHING_TO_STOP if outcome.nothing_to_stop else KILL_STOPPED
        self._channel.tell(notice)
        self._outstanding &= self._running_now()  # the queue is cleared
        self.prompt_if_idle()

    async def _run_turn(self, turn: Turn, guard: TurnGuard) -> None:
        """Play the turn in the console's channel (`tomori.turns.play`), as the cog plays one
        in a Discord channel: its output held until it ends, piped."""
        trigger = self._channel.message(turn.trigger.message_id)
        if trigger is None:  # cannot be: the database is the session's own
            log.warning("skipping turn %s: its message is not in the console", turn.turn_id)
            return
        self._channel.begin_turn(trigger)
        self._running = turn.trigger.message_id
        try:
            await play(self._stage, self._surface, turn, guard)
        finally:
            self._channel.end_turn()
            self._running = None
            self._outstanding.discard(turn.trigger.message_id or "")
            self.prompt_if_idle()

    async def _tell_expired(self, trigger: Trigger) -> None:
        """A line dropped from the queue unanswered (too old by its turn): it hears so."""
        self._outstanding.discard(trigger.message_id or "")
        self._channel.tell(NOT_ANSWERED, reply_to=trigger.message_id)
        self.prompt_if_idle()
