"""`python bot.py --console`: the cog's own machinery answering in a terminal, no Discord needed.

What runs is what runs in a channel: the turn itself (`tomori.turns.play`, on the console's
`Surface`), the settings, the store and its channel lock (so a line typed while an answer
streams is a follow-up that stops it, or, past three in a row or with follow-ups off, is queued
and answered in order, replying to its own line; a stop word stops the answer and clears the
queue), the model chain with its fallbacks and timeouts, and the
writer in the configured delivery mode, writing into a `ConsoleChannel` instead of a Discord
channel. Piped lines are never follow-ups: a script is read at once, so each is answered.

The store is a SQLite file of the session's own, in a temporary folder, never the bot's
database: every process on a lock database takes over the channels a stopped process left
(`ChannelLocks` recovers them at start and in its heartbeat), and a console, which cannot
answer a Discord channel, would drop their queues. `--check` opens the configured database.

`/kill` at the prompt, or Ctrl+C while an answer streams, stops it as the slash command does
(and clears the queue); Ctrl+C with a draft typed drops the draft; Ctrl+C with nothing to stop,
or the end of input (Ctrl+D, `/exit`), ends the session, the latter once every answer is done,
so `printf 'hello\\n' | python bot.py --console` prints the answer and exits. SIGTERM ends it
at once. In a terminal the console takes the keys itself (`terminal.py`): a paste is one
message, the prompt names the number the message will get, and keys typed while an answer
streams wait, unseen, for the next prompt (a message sent meanwhile is shown after the answer,
with its number). Piped, a message is a line, or, from a line that opens a code fence, every
line until the fence closes (see `MessageLines`): a script of questions is one message a
line. A message that is a command (`commands.py`) runs it instead, `/tomori` on the console's
own server (`server.py`), whose settings its next turn reads.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import tempfile
import time
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from tomori.cast.personas import addressed
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.console.channel import ConsoleChannel, ConsoleMessage
from tomori.console.commands import (
    Verb,
    as_message,
    command_in,
    help_text,
    scene_request,
    tomori_action,
)
from tomori.console.commands import unknown as unknown_command
from tomori.console.input import KeyReader, LineReader, MessageLines, trimmed
from tomori.console.server import CHANNEL, HERE, SERVER, USER, ConsoleServer
from tomori.console.surface import ConsoleSurface, tell_held
from tomori.console.terminal import (
    READ_AHEAD_S,
    Ended,
    Erased,
    LineEditor,
    Sent,
    Typed,
    keys_mode,
)
from tomori.delivery.notices import (
    GENERATION_ERROR,
    KILL_NOTHING_TO_STOP,
    KILL_STOPPED,
    NOT_ANSWERED,
    Notice,
)
from tomori.locks import Admission, ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.policy.admin import perform
from tomori.policy.interruptions import follow_up_key, is_stop_word
from tomori.policy.limits import BotTurns
from tomori.store import Database
from tomori.store.connect import open_database
from tomori.turns import Addressed, Stage, TurnRequest, play
from tomori.turns.scene import scene_asked

log = logging.getLogger(__name__)


def banner(chain: ModelChain, settings: Settings) -> str:
    return (
        f"tomori console: {chain.described}, {settings.delivery} delivery. Type a message; "
        f"/kill or Ctrl+C stops an answer; /exit or Ctrl+D leaves; /help lists the commands."
    )


class ConsoleSession:
    """One terminal session over one database; `run` owns everything it starts."""

    def __init__(
        self, settings: Settings, chain: ModelChain, out: TextIO, *, live: bool, fd: int = 0
    ) -> None:
        self._settings = settings
        self._chain = chain
        self._live = live
        self._out = out
        self._fd = fd
        self._channel = ConsoleChannel(out, live=live, delivery=settings.delivery)
        self._reader = KeyReader(fd) if live else LineReader(fd)
        self._editor = LineEditor()
        """Live: the draft being typed (the terminal's keys are the console's own)."""
        self._server = ConsoleServer(settings, chain)
        self._surface = ConsoleSurface(self._channel, self._server, settings)
        self._drawn_in = BotTurns.capped_at(settings.max_bot_turns)
        """Personas drawn in by another's answer since the person at the terminal last spoke."""
        self._locks: ChannelLocks | None = None
        self._stage: Stage | None = None
        self._quit = asyncio.Event()
        self._kills: set[asyncio.Task[None]] = set()
        """Kills Ctrl+C started: each is awaited before the session closes."""
        self._outstanding: set[str] = set()
        """The messages admitted whose answer has not ended: what Ctrl+C stops, if any."""
        self._running: str | None = None
        """The message whose turn is in `_run_turn`: what a /kill leaves of `_outstanding`."""
        self._killing = 0
        """Kills under way: the prompt waits for their notice."""

    async def run(self) -> int:
        with tempfile.TemporaryDirectory(prefix="tomori-console-") as folder:
            own = replace(self._settings, db_path=Path(folder) / "console.db", db_url=None)
            return await self._run_on(await open_database(own))

    async def _run_on(self, database: Database) -> int:
        loop = asyncio.get_running_loop()
        try:
            self._server.start(database)
            self._locks = ChannelLocks(
                lock_backend(database, self._settings),
                self._settings,
                self._run_turn,
                self._tell_expired,
            )
            server = self._server
            self._stage = Stage(
                self._settings,
                self._locks,
                server.config,
                server.tools,
                server.tool_switches,
                server.personas,
                server.metrics,
                None,
                self._drawn_in,
            )
            await self._locks.start()
            loop.add_signal_handler(signal.SIGINT, self._interrupted)
            for ending in (signal.SIGTERM, signal.SIGHUP):  # SIGHUP: the terminal closed
                loop.add_signal_handler(ending, self._quit.set)
            self._reader.start()
            if isinstance(self._reader, KeyReader):
                with keys_mode(self._fd, self._out):
                    self._channel.say(banner(self._chain, self._settings))
                    self._channel.prompt()
                    await self._serve_keys(self._locks, self._reader)
            else:
                await self._serve(self._locks, self._reader)
        finally:
            self._reader.stop()
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                loop.remove_signal_handler(signum)
            await self._close(database)
        return 0

    async def _serve(self, locks: ChannelLocks, reader: LineReader) -> None:
        """Piped: read messages until the end of input or /exit (then wait for the answers), or
        a quit."""
        gathered = MessageLines()
        while True:
            line = await self._unless_quit(reader.next_line())
            if self._quit.is_set():
                return
            message = gathered.flush() if line is None else gathered.add(line)
            if message is not None and not await self._handle(locks, message):
                line = None  # /exit
            if line is None:
                await self._finish(locks)
                return

    async def _serve_keys(self, locks: ChannelLocks, reader: KeyReader) -> None:
        """In a terminal: keys edit the draft, shown after the prompt, until the end of input
        or /exit (then wait for the answers), or a quit."""
        enter_at = 0.0  # when the last read came: the one a pending Enter ended
        while True:
            within = None
            if self._editor.enter_pending:
                within = max(0.0, enter_at + READ_AHEAD_S - time.monotonic())
            try:
                keys = await self._unless_quit(reader.next_keys(within))
            except TimeoutError:
                edits = self._editor.commit()
            else:
                if self._quit.is_set():
                    return
                if keys is None or keys.at - enter_at > READ_AHEAD_S:
                    edits = self._editor.commit()  # the Enter came alone: it sends
                else:
                    edits = []
                if keys is None:
                    edits.append(Ended())
                else:
                    edits += self._editor.feed(keys.text)
                    enter_at = keys.at
            for edit in edits:
                if isinstance(edit, Typed):
                    self._channel.typed(edit.text)
                elif isinstance(edit, Erased):
                    self._channel.erased(edit.text, edit.draft)
                elif isinstance(edit, Sent):
                    shown = self._channel.prompted
                    self._channel.entered()
                    if not await self._handle(locks, edit.text, echo=not shown):
                        edits = [Ended()]
                        break
            if any(isinstance(edit, Ended) for edit in edits):
                self._channel.entered()
                await self._finish(locks)
                return

    async def _finish(self, locks: ChannelLocks) -> None:
        """The end of input: wait for the answers still to come, saying so in a terminal."""
        if self._live and self._outstanding:
            self._channel.say("(end of input: exiting once the answers are done)")
        await self._unless_quit(locks.wait_idle(self._channel.channel_id))

    async def _handle(self, locks: ChannelLocks, message: str, *, echo: bool = False) -> bool:
        """Send a message (`echo`: shown with its number, as it was typed unseen while an
        answer streamed), or run the command it is; False for /exit."""
        text = trimmed(message)
        command = command_in(text)
        if command is None:
            if text:
                self._drawn_in.human_spoke(self._channel.channel_id)
            if is_stop_word(text, self._settings.stop_words):
                await self._stop_word(locks, text, echo=echo)
            elif text:
                await self._submit(locks, as_message(text), echo=echo)
        elif command.kind is Verb.EXIT and not command.rest:
            return False
        elif command.kind is Verb.KILL and not command.rest:
            await self._kill()
        elif command.kind is Verb.HELP and not command.rest:
            self._channel.say(help_text(self._settings.stop_words))
        elif command.kind is Verb.SCENE:
            await self._scene(locks, text, command.rest, echo=echo)
        elif command.kind is Verb.TOMORI:
            if not self._live:  # a script's setting applies after the messages written before it
                await self._unless_quit(locks.wait_idle(self._channel.channel_id))
            action = tomori_action(command.rest)
            done = (
                action if isinstance(action, Notice) else await perform(action, self._server, HERE)
            )
            self._channel.tell(done)
        else:
            self._channel.say(unknown_command(command))
        self._prompt_if_idle()
        return True

    async def _unless_quit[T](self, waiting: Coroutine[Any, Any, T]) -> T | None:
        """`waiting`'s result, or None (`waiting` cancelled) once the session is told to quit."""
        task = asyncio.create_task(waiting)
        quitting = asyncio.create_task(self._quit.wait())
        try:
            await asyncio.wait({task, quitting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pending in (task, quitting):
                pending.cancel()
            await asyncio.gather(task, quitting, return_exceptions=True)
        return task.result() if task.done() and not task.cancelled() else None

    async def _submit(
        self, locks: ChannelLocks, text: str, *, echo: bool, posted: ConsoleMessage | None = None
    ) -> None:
        """A message to the model (`posted`: already in the channel, its number taken)."""
        message = posted or self._channel.post(text)
        message_id = self._channel.message_id(message)
        held = await self._server.admit(message_id)
        if echo or (held is not None and not self._live):  # piped: a turn prints its message
            self._channel.echo(message)
        if held is not None:
            tell_held(self._channel, held, message_id)
            return
        keys = [p.key for p in addressed(await self._server.personas.of_server(SERVER), text)]
        follows = None
        if self._live and await self._server.follow_ups():
            follows = follow_up_key(keys)
        request = TurnRequest(Addressed.DIRECTLY, tuple(keys))
        await self._queue(locks, message, request, follow_up_key=follows)

    async def _stop_word(self, locks: ChannelLocks, text: str, *, echo: bool) -> None:
        """A stop word (`TOMORI_STOP_WORDS`) stops the answer streaming and clears the queue,
        as it does for the user being answered in a channel, and, as a command, is shown to
        no model; with no answer under way it is an ordinary message."""
        message = self._channel.post(text)  # its number is taken as it is sent
        self._killing += 1  # the stopped turn's end prompts not: the stop's line comes first
        try:
            stopped = await locks.stop_for(self._channel.channel_id, USER)
        finally:
            self._killing -= 1
        if not stopped:
            await self._submit(locks, as_message(text), echo=echo, posted=message)
            return
        message.command = True
        cleared = await self._left_in_queue(locks)
        if not self._live:  # piped, a message prints as its turn starts: these get none
            for number in sorted(cleared):
                dropped = self._channel.message(str(number))
                if dropped is not None:
                    self._channel.echo(dropped)
        if echo or not self._live:
            self._channel.echo(message)
        said = f"(#{message.id} stopped the answer"
        if cleared:
            said += " and cleared " + ", ".join(f"#{number}" for number in sorted(cleared))
        self._channel.say(said + ")")

    async def _scene(self, locks: ChannelLocks, text: str, rest: str, *, echo: bool) -> None:
        """`/scene`: checked as the slash command is, then queued as the channel's turn; the
        line typed stands in the channel (for its number) but no model is shown it."""
        if not self._live:  # a script's scene follows the answers to the lines before it
            await self._unless_quit(locks.wait_idle(self._channel.channel_id))
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
        await self._queue(locks, message, TurnRequest(Addressed.DIRECTLY, scene=asked.scene))

    async def _queue(
        self,
        locks: ChannelLocks,
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
        admission = await locks.submit(trigger)
        if admission in (Admission.IGNORED, Admission.FAILED):
            self._outstanding.discard(message_id)
        if admission is Admission.IGNORED:
            self._channel.say(f"(#{message.id} is ignored: a /kill is still stopping the answer)")
        elif admission is Admission.FAILED:
            self._channel.tell(GENERATION_ERROR)
        elif admission is Admission.FOLLOW_UP:
            await self._left_in_queue(locks)

    async def _left_in_queue(self, locks: ChannelLocks) -> set[int]:
        """Forget the messages the queue dropped unanswered (a stop word clears it; a
        follow-up replaces the follow-ups before it), and return their numbers: they get no
        turn, so no turn's end would.

        Messages are admitted one at a time, so none joins the queue while it is read; one
        that leaves it meanwhile to start its turn is the one running, or has ended."""
        queued = set(await locks.queued_message_ids(self._channel.channel_id))
        kept = self._outstanding & (queued | self._running_now())
        dropped, self._outstanding = self._outstanding - kept, kept
        return {int(message_id) for message_id in dropped}

    def _running_now(self) -> set[str]:
        return set() if self._running is None else {self._running}

    def _prompt_if_idle(self) -> None:
        if self._live and not self._outstanding and not self._killing:
            self._channel.prompt(self._editor.draft)

    # -- /kill and Ctrl+C ---------------------------------------------------------------------

    def _interrupted(self) -> None:
        """Ctrl+C: stop the answer streaming, as /kill does, and drop the draft typed meanwhile;
        with none, drop the draft, or with none either, end the session."""
        locks = self._locks
        if locks is not None and self._outstanding:
            self._editor.clear()  # unseen while the answer streamed: nothing to erase
            task = asyncio.create_task(self._kill())
            self._kills.add(task)
            task.add_done_callback(self._kills.discard)
        elif self._editor.draft:  # as in a shell: the draft is dropped, the prompt stays
            self._editor.clear()
            self._channel.typed("^C")
            self._channel.entered()
            self._channel.prompt()
        else:
            self._quit.set()

    async def _kill(self) -> None:
        assert self._locks is not None
        self._killing += 1  # the stopped turn's end prompts not: the kill's notice comes first
        try:
            outcome = await self._locks.kill(self._channel.channel_id, requester_id=USER)
        finally:
            self._killing -= 1
        notice: Notice = KILL_NOTHING_TO_STOP if outcome.nothing_to_stop else KILL_STOPPED
        self._channel.tell(notice)
        self._outstanding &= self._running_now()  # the queue is cleared
        self._prompt_if_idle()

    # -- a turn -------------------------------------------------------------------------------

    async def _run_turn(self, turn: Turn, guard: TurnGuard) -> None:
        """Play the turn in the console's channel (`tomori.turns.play`), as the cog plays one
        in a Discord channel: its output held until it ends, piped."""
        assert self._stage is not None  # turns run only while the locks are open
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
            self._prompt_if_idle()

    async def _tell_expired(self, trigger: Trigger) -> None:
        """A line dropped from the queue unanswered (too old by its turn): it hears so."""
        self._outstanding.discard(trigger.message_id or "")
        self._channel.tell(NOT_ANSWERED, reply_to=trigger.message_id)
        self._prompt_if_idle()

    async def _close(self, database: Database) -> None:
        """Stop what still runs and clear the queue (as /kill does), then close."""
        for task in list(self._kills):
            await asyncio.gather(task, return_exceptions=True)
        locks, self._locks = self._locks, None
        if locks is not None:
            await locks.kill(self._channel.channel_id, requester_id=USER)
            await locks.close()
        await self._server.aclose()
        await database.close()


async def run_console(settings: Settings, chain: ModelChain) -> int:
    """The console on standard input and output; interactive when standard input is a terminal."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    session = ConsoleSession(settings, chain, sys.stdout, live=sys.stdin.isatty())
    return await session.run()
