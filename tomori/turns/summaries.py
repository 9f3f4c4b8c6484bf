"""`Summaries`: the background folds that keep each channel's summary, and their owner.

A turn that read a full history window asks for a fold (`fold_later`) once its answers are
written (`Stage.fold`), and goes on: the fold runs as a task of its own, never on the answer's
path, one per channel at a time (a turn that finds one running asks for none). It reads what
fell out of the window since the summary's last message (`Earlier`: at most a window's worth,
oldest first), asks a model to fold it into the summary so far, and keeps the result; the
messages of members who asked to be forgotten are left out. The model is
`TOMORI_SUMMARY_MODEL` when its provider serves the channel's chain, else the chain's first
(`tomori.summary.model`); it writes at most `TOMORI_SUMMARY_TOKENS`, and its tokens count in
the server's day as the bot's (no requester), never a member's. A fold that fails, or takes
longer than `FOLD_TIMEOUT_S`, is logged and left: the next turn asks again.

A deleted message drops the summaries that covered it (`messages_deleted`), and a fold under
way in that channel keeps nothing (it may have read the message), nor does one that read a
message of a member who asked to be forgotten meanwhile: the store's write checks both, in
whichever process they happened (`SummaryStore.save`). `aclose` cancels and awaits every
task, before the database closes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from tomori.config.models import ModelEntry
from tomori.config.settings import Settings
from tomori.generation.results import TurnUsage
from tomori.monitoring.metrics import Metrics
from tomori.prompt.prefill import prepare_request
from tomori.providers.base import ContextItem, Provider, StreamRequest, TextDelta, UsageEvent
from tomori.summary.folding import summarizing_request, summary_note
from tomori.summary.model import summarizer
from tomori.summary.store import Began, Said, SummaryStore

log = logging.getLogger(__name__)

FOLD_TIMEOUT_S = 120.0
"""The longest one fold may take: a summarizing model that stalls holds no task forever."""

Earlier = Callable[[str | None, int], Awaitable[Sequence[Said]]]
"""What fell out of a turn's window: at most `limit` messages after message `after` (None: the
channel's start), oldest first; none when the window held the whole channel."""


@dataclass(frozen=True, slots=True)
class Where:
    guild_id: str | None
    channel_id: str
    limit_scope: str
    """Where the fold's tokens count (the server, or direct messages)."""


class Summaries:
    """The channel summaries of one runtime (see the module docstring)."""

    def __init__(self, store: SummaryStore, settings: Settings, metrics: Metrics) -> None:
        self._store = store
        self._settings = settings
        self._metrics = metrics
        self._folding: dict[str, asyncio.Task[None]] = {}
        self._dropping: set[asyncio.Task[None]] = set()

    async def note(self, guild_id: str | None, channel_id: str) -> tuple[ContextItem, ...]:
        """The note on the channel's summary a turn is shown before its history."""
        return summary_note(await self._store.of(guild_id, channel_id))

    def fold_later(
        self,
        where: Where,
        earlier: Earlier,
        entries: Sequence[ModelEntry],
        providers: Mapping[str, Provider],
    ) -> None:
        """Fold what fell out of the channel's window, in the background (see the module)."""
        running = self._folding.get(where.channel_id)
        if running is not None and not running.done():
            return
        chosen = self._model(entries, providers)
        if chosen is None:
            return
        task = asyncio.create_task(
            self._fold(where, earlier, *chosen), name=f"tomori-summary-{where.channel_id}"
        )
        self._folding[where.channel_id] = task
        task.add_done_callback(lambda done: self._ended(where.channel_id, done))

    def messages_deleted(self, channel_id: str, message_ids: Collection[str]) -> None:
        """Drop the channel's summary if it covered one of `message_ids`, in the background."""
        task = asyncio.create_task(self._drop(channel_id, tuple(message_ids)))
        self._dropping.add(task)
        task.add_done_callback(self._dropping.discard)

    async def aclose(self) -> None:
        tasks = [*self._folding.values(), *self._dropping]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _model(
        self, entries: Sequence[ModelEntry], providers: Mapping[str, Provider]
    ) -> tuple[ModelEntry, Provider] | None:
        chosen = summarizer(self._settings, entries, providers)
        if chosen is None:
            return None
        if chosen.unserved:
            log.warning(
                "TOMORI_SUMMARY_MODEL %s: no provider of this chain serves it; the chain's "
                "first model summarizes",
                self._settings.summary_model,
            )
        provider = providers.get(chosen.entry.provider)
        return None if provider is None else (chosen.entry, provider)

    async def _fold(
        self, where: Where, earlier: Earlier, entry: ModelEntry, provider: Provider
    ) -> None:
        try:
            async with asyncio.timeout(FOLD_TIMEOUT_S):
                began = await self._store.begin(where.guild_id, where.channel_id)
                summary = began.summary
                after = None if summary is None else summary.through_id
                read = await earlier(after, self._settings.history_limit)
                said = await self._store.unforgotten(read)
                if not said:
                    await self._passed(where, began, read)
                    return
                request = summarizing_request(
                    entry.model, summary, said, self._settings.summary_tokens
                )
                text = await self._written(where, entry, provider, request)
        except TimeoutError:
            log.warning(
                "channel %s: the summary by %s took over %.0fs: left for the next turn",
                where.channel_id,
                entry.label,
                FOLD_TIMEOUT_S,
            )
            return
        if not text:
            log.info(
                "channel %s: %s wrote an empty summary: kept none", where.channel_id, entry.label
            )
            return
        through = read[-1].message_id  # what was left out is passed, not read again
        if not await self._store.save(
            where.guild_id, where.channel_id, text, said, began, through=through
        ):
            log.info(
                "channel %s: a message was deleted, a member forgotten or the summary written"
                " as it was folded: kept none",
                where.channel_id,
            )
            return
        log.info("channel %s: summary now covers %d more messages", where.channel_id, len(said))

    async def _passed(self, where: Where, began: Began, read: Sequence[Said]) -> None:
        """Move the summary past `read`, all of it left out (members who turned memories off
        or asked to be forgotten), its text as it was: else each later fold read the same
        messages again, and the channel's summary stopped for everyone."""
        if not read:
            return
        text = "" if began.summary is None else began.summary.text
        through = read[-1].message_id
        await self._store.save(where.guild_id, where.channel_id, text, (), began, through=through)

    async def _written(
        self, where: Where, entry: ModelEntry, provider: Provider, request: StreamRequest
    ) -> str:
        """The summary the model wrote for `request`; its tokens recorded as the bot's."""
        parts: list[str] = []
        stream = provider.stream(prepare_request(request))
        try:
            async for event in stream:
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, UsageEvent):
                    usage = event.usage
                    self._metrics.record_usage(
                        TurnUsage(
                            where.channel_id,
                            None,  # the bot's, never a member's
                            None,
                            entry.label,
                            usage.input_tokens,
                            usage.output_tokens,
                            where.limit_scope,
                        )
                    )
        finally:
            await stream.aclose()
        return "".join(parts).strip()

    async def _drop(self, channel_id: str, message_ids: Sequence[str]) -> None:
        try:
            await self._store.drop_messages(channel_id, message_ids)
        except Exception:
            log.exception("channel %s: could not drop the summary of a deleted message", channel_id)

    def _ended(self, channel_id: str, task: asyncio.Task[None]) -> None:
        if self._folding.get(channel_id) is task:
            del self._folding[channel_id]
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.warning("channel %s: its summary could not be written: %r", channel_id, error)
