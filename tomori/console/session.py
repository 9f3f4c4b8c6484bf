"""`tomori --console`: the cog's own machinery answering in a terminal, no Discord needed.

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
so `printf 'hello\\n' | tomori --console` prints the answer and exits. SIGTERM ends it
at once. In a terminal the console takes the keys itself (`terminal.py`): a paste is one
message, the prompt names the number the message will get, and keys typed while an answer
streams wait, unseen, for the next prompt (a message sent meanwhile is shown with its number,
before the answer's next message). Piped, a message is a line, or, from a line that opens a
code fence, every line until the fence closes (see `MessageLines`): a script of questions is
one message a line. A message that is a command (`commands.py`) runs it instead, `/tomori` on
the console's own server (`server.py`), whose settings its next turn reads.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.console.channel import ConsoleChannel
from tomori.console.dispatch import Dispatcher, until_quit
from tomori.console.input import KeyReader, LineReader, MessageLines
from tomori.console.server import ConsoleServer
from tomori.console.terminal import (
    READ_AHEAD_S,
    Ended,
    Erased,
    LineEditor,
    Sent,
    Typed,
    keys_mode,
)
from tomori.log_lines import log_handler
from tomori.monitoring.exporter import Exporter, exporter_for
from tomori.monitoring.levels import lock_levels
from tomori.monitoring.serving import database_answers, serving_metrics
from tomori.store import Database
from tomori.store.connect import open_database

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
        self._quit = asyncio.Event()
        self._kills: set[asyncio.Task[None]] = set()
        """Kills Ctrl+C started: each is awaited before the session closes."""

    async def run(self) -> int:
        """The session on a database of its own, serving metrics if `TOMORI_METRICS_ADDR` is
        set (ready while its database answers: the console needs no gateway)."""
        exporter = exporter_for(self._settings, self._chain)
        with tempfile.TemporaryDirectory(prefix="tomori-console-") as folder:
            own = replace(self._settings, db_path=Path(folder) / "console.db", db_url=None)
            database = await open_database(own, failed=exporter.database_failed)
            try:
                async with serving_metrics(
                    self._settings, exporter, ready=lambda: database_answers(database)
                ) as url:
                    if url is not None:
                        print(f"note: serving /metrics at {url}", file=sys.stderr, flush=True)
                    return await self._run_on(database, exporter)
            finally:
                await database.close()

    async def _run_on(self, database: Database, exporter: Exporter) -> int:
        loop = asyncio.get_running_loop()
        try:
            self._server.start(database, exporter)
            dispatcher = Dispatcher(
                self._settings,
                database,
                self._channel,
                self._server,
                self._editor,
                self._quit,
                live=self._live,
            )
            await dispatcher.locks.start()
            stop_reading = lock_levels(dispatcher.locks, exporter)
            try:
                loop.add_signal_handler(signal.SIGINT, self._interrupted, dispatcher)
                for ending in (signal.SIGTERM, signal.SIGHUP):  # SIGHUP: the terminal closed
                    loop.add_signal_handler(ending, self._quit.set)
                self._reader.start()
                if isinstance(self._reader, KeyReader):
                    with keys_mode(self._fd, self._out):
                        self._channel.say(banner(self._chain, self._settings))
                        self._channel.prompt()
                        await self._serve_keys(dispatcher, self._reader)
                else:
                    await self._serve(dispatcher, self._reader)
            finally:
                self._reader.stop()
                for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                    loop.remove_signal_handler(signum)
                for task in list(self._kills):
                    await asyncio.gather(task, return_exceptions=True)
                stop_reading()
                await dispatcher.close()
        finally:
            await self._server.aclose()
        return 0

    async def _serve(self, dispatcher: Dispatcher, reader: LineReader) -> None:
        """Piped: read messages until the end of input or /exit (then wait for the answers), or
        a quit."""
        gathered = MessageLines()
        while True:
            line = await until_quit(self._quit, reader.next_line())
            if self._quit.is_set():
                return
            message = gathered.flush() if line is None else gathered.add(line)
            if message is not None and not await dispatcher.handle(message):
                line = None  # /exit
            if line is None:
                await self._finish(dispatcher)
                return

    async def _serve_keys(self, dispatcher: Dispatcher, reader: KeyReader) -> None:
        """In a terminal: keys edit the draft, shown after the prompt, until the end of input
        or /exit (then wait for the answers), or a quit."""
        enter_at = 0.0  # when the last read came: the one a pending Enter ended
        while True:
            within = None
            if self._editor.enter_pending:
                within = max(0.0, enter_at + READ_AHEAD_S - time.monotonic())
            try:
                keys = await until_quit(self._quit, reader.next_keys(within))
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
                    if not await dispatcher.handle(edit.text, echo=not shown):
                        edits = [Ended()]
                        break
            if any(isinstance(edit, Ended) for edit in edits):
                self._channel.entered()
                await self._finish(dispatcher)
                return

    async def _finish(self, dispatcher: Dispatcher) -> None:
        """The end of input: wait for the answers still to come, saying so in a terminal."""
        if self._live and dispatcher.answering:
            self._channel.say("(end of input: exiting once the answers are done)")
        await until_quit(self._quit, dispatcher.locks.wait_idle(self._channel.channel_id))

    # -- /kill and Ctrl+C ---------------------------------------------------------------------

    def _interrupted(self, dispatcher: Dispatcher) -> None:
        """Ctrl+C: stop the answer streaming, as /kill does, and drop the draft typed meanwhile;
        with none, drop the draft, or with none either, end the session."""
        if dispatcher.answering:
            self._editor.clear()  # unseen while the answer streamed: nothing to erase
            task = asyncio.create_task(dispatcher.kill())
            self._kills.add(task)
            task.add_done_callback(self._kills.discard)
        elif self._editor.draft:  # as in a shell: the draft is dropped, the prompt stays
            self._editor.clear()
            self._channel.typed("^C")
            self._channel.entered()
            self._channel.prompt()
        else:
            self._quit.set()


async def run_console(settings: Settings, chain: ModelChain) -> int:
    """The console on standard input and output; interactive when standard input is a terminal."""
    console_text = "%(levelname)s %(name)s: %(message)s"  # beside the answers: no time
    logging.basicConfig(
        level=logging.WARNING, handlers=[log_handler(settings.log_format, text=console_text)]
    )
    session = ConsoleSession(settings, chain, sys.stdout, live=sys.stdin.isatty())
    return await session.run()
