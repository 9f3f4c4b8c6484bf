"""`python bot.py --console`: the cog's own machinery answering in a terminal, no Discord needed.

What runs is what runs in a channel: the settings, the store and its channel lock (so lines
typed while an answer streams are queued and answered in order, each replying to its own
line), the model chain with its fallbacks and timeouts, and the writer in the configured
delivery mode, writing into a `ConsoleChannel` instead of a Discord channel.

The store is a SQLite file of the session's own, in a temporary folder, never the bot's
database: every process on a lock database takes over the channels a stopped process left
(`ChannelLocks` recovers them at start and in its heartbeat), and a console, which cannot
answer a Discord channel, would drop their queues. `--check` opens the configured database.

`/kill` at the prompt, or Ctrl+C while an answer streams, stops it as the slash command does
(and clears the queue); Ctrl+C with nothing to stop, or the end of input (Ctrl+D), ends the
session, the latter once every answer is done, so `printf 'hello\\n' | python bot.py --console`
prints the answer and exits. SIGTERM ends it at once. A message is a line, or, from a line that
opens a code fence, every line until the fence closes (see `MessageLines`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import tempfile
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.console.channel import ConsoleChannel
from tomori.console.input import LineReader, MessageLines
from tomori.delivery.notices import (
    GENERATION_ERROR,
    KILL_NOTHING_TO_STOP,
    KILL_STOPPED,
    NOT_ANSWERED,
    Notice,
)
from tomori.generation.answering import answer_turn
from tomori.generation.state import TurnState
from tomori.generation.tools import CURRENT_TIME, ToolRegistry
from tomori.locks import Admission, ChannelLocks, Trigger, Turn, TurnGuard, lock_backend
from tomori.providers.base import Provider
from tomori.store import Database
from tomori.store.connect import open_database

log = logging.getLogger(__name__)

REQUESTER = "console"
KILL_COMMAND = "/kill"


def banner(chain: ModelChain, settings: Settings) -> str:
    return (
        f"tomori console: {chain.described}, {settings.delivery} delivery. Type a message; "
        f"{KILL_COMMAND} or Ctrl+C stops an answer; Ctrl+C with nothing to stop, or Ctrl+D, "
        f"exits."
    )


class ConsoleSession:
    """One terminal session over one database; `run` owns everything it starts."""

    def __init__(
        self, settings: Settings, chain: ModelChain, out: TextIO, *, live: bool, fd: int = 0
    ) -> None:
        self._settings = settings
        self._chain = chain
        self._live = live
        self._channel = ConsoleChannel(out, live=live)
        self._reader = LineReader(fd)
        self._tools = ToolRegistry(t for t in (CURRENT_TIME,) if t.name in settings.tools)
        self._providers: dict[str, Provider] = {}
        self._locks: ChannelLocks | None = None
        self._quit = asyncio.Event()
        self._kills: set[asyncio.Task[None]] = set()
        """Kills Ctrl+C started: each is awaited before the session closes."""
        self._outstanding = 0
        """Lines admitted whose answer has not ended: what Ctrl+C stops, if any."""
        self._running = False
        """A turn is in `_run_turn`: what a /kill leaves of `_outstanding`."""

    async def run(self) -> int:
        with tempfile.TemporaryDirectory(prefix="tomori-console-") as folder:
            own = replace(self._settings, db_path=Path(folder) / "console.db", db_url=None)
            return await self._run_on(await open_database(own))

    async def _run_on(self, database: Database) -> int:
        loop = asyncio.get_running_loop()
        try:
            self._providers = self._chain.build_providers()
            self._locks = ChannelLocks(
                lock_backend(database, self._settings),
                self._settings,
                self._run_turn,
                self._tell_expired,
            )
            await self._locks.start()
            loop.add_signal_handler(signal.SIGINT, self._interrupted)
            loop.add_signal_handler(signal.SIGTERM, self._quit.set)
            self._reader.start()
            if self._live:
                self._channel.say(banner(self._chain, self._settings))
                self._channel.prompt()
            await self._serve(self._locks)
        finally:
            self._reader.stop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
            await self._close(database)
        return 0

    async def _serve(self, locks: ChannelLocks) -> None:
        """Read messages until the end of input (then wait for the answers) or a quit."""
        gathered = MessageLines()
        while True:
            line = await self._unless_quit(self._reader.next_line())
            if self._quit.is_set():
                return
            if line is None:
                if (last := gathered.flush()) is not None and last.strip():
                    await self._submit(locks, last.strip())
                if self._live and self._outstanding:
                    self._channel.say("(end of input: exiting once the answers are done)")
                await self._unless_quit(locks.wait_idle(self._channel.channel_id))
                return
            if line.strip() == KILL_COMMAND and not gathered.open:
                await self._kill()
                continue
            message = gathered.add(line)
            if message is None:
                continue
            if text := message.strip():
                await self._submit(locks, text)
            elif self._live and not self._outstanding:
                self._channel.prompt()

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

    async def _submit(self, locks: ChannelLocks, text: str) -> None:
        message = self._channel.post(text)
        message_id = self._channel.message_id(message)
        trigger = Trigger(self._channel.channel_id, message_id, REQUESTER)
        self._outstanding += 1  # before: a turn that starts may end before submit returns
        admission = await locks.submit(trigger)
        if admission in (Admission.IGNORED, Admission.FAILED):
            self._outstanding = max(0, self._outstanding - 1)
        if admission is Admission.QUEUED and self._live:
            self._channel.say(f"(#{message.id} is queued: answered after the answer before it)")
        elif admission is Admission.IGNORED:
            self._channel.say(f"(#{message.id} is ignored: a /kill is still stopping the answer)")
        elif admission is Admission.FAILED:
            self._channel.tell(GENERATION_ERROR)

    # -- /kill and Ctrl+C ---------------------------------------------------------------------

    def _interrupted(self) -> None:
        """Ctrl+C: stop the answer streaming, as /kill does; with none, end the session."""
        locks = self._locks
        if locks is not None and self._outstanding > 0:
            task = asyncio.create_task(self._kill())
            self._kills.add(task)
            task.add_done_callback(self._kills.discard)
        else:
            self._quit.set()

    async def _kill(self) -> None:
        assert self._locks is not None
        outcome = await self._locks.kill(self._channel.channel_id, requester_id=REQUESTER)
        notice: Notice = KILL_NOTHING_TO_STOP if outcome.nothing_to_stop else KILL_STOPPED
        self._channel.tell(notice)
        self._outstanding = 1 if self._running else 0  # the queue is cleared
        if self._live and not self._outstanding:
            self._channel.prompt()

    # -- a turn -------------------------------------------------------------------------------

    async def _run_turn(self, turn: Turn, guard: TurnGuard) -> None:
        """Answer the trigger in the console's channel, as the cog answers one in Discord."""
        trigger = self._channel.message(turn.trigger.message_id)
        if trigger is None:  # cannot be: the database is the session's own
            log.warning("skipping turn %s: its message is not in the console", turn.turn_id)
            return
        state = TurnState(
            turn.channel_id,
            notices=self._channel,
            trigger_message_id=turn.trigger.message_id,
            from_queue=turn.from_queue,
        )
        self._channel.begin_turn(trigger)
        self._running = True
        try:
            assert self._locks is not None  # turns run only while the locks are open
            waiting = await self._locks.queued_message_ids(self._channel.channel_id)
            if guard.stop_requested():
                return
            await answer_turn(
                turn,
                guard,
                state,
                self._channel,
                entries=self._chain.entries,
                providers=self._providers,
                tools=self._tools,
                settings=self._settings,
                context=self._channel.context(trigger, waiting, self._settings),
                surface_errors=True,
            )
        except Exception:
            log.exception("turn %s failed before any model was asked", turn.turn_id)
            await state.post_notice(GENERATION_ERROR)
        finally:
            self._channel.end_turn()
            self._running = False
            self._outstanding = max(0, self._outstanding - 1)
            if self._live and not self._outstanding:
                self._channel.prompt()

    async def _tell_expired(self, trigger: Trigger) -> None:
        """A line dropped from the queue unanswered (too old by its turn): it hears so."""
        self._outstanding = max(0, self._outstanding - 1)
        self._channel.tell(NOT_ANSWERED, reply_to=trigger.message_id)
        if self._live and not self._outstanding:
            self._channel.prompt()

    async def _close(self, database: Database) -> None:
        """Stop what still runs and clear the queue (as /kill does), then close."""
        for task in list(self._kills):
            await asyncio.gather(task, return_exceptions=True)
        locks, self._locks = self._locks, None
        if locks is not None:
            await locks.kill(self._channel.channel_id, requester_id=REQUESTER)
            await locks.close()
        for provider in self._providers.values():
            await provider.aclose()
        await database.close()


async def run_console(settings: Settings, chain: ModelChain) -> int:
    """The console on standard input and output; interactive when standard input is a terminal."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    session = ConsoleSession(settings, chain, sys.stdout, live=sys.stdin.isatty())
    return await session.run()
