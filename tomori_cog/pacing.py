"""The cog's requests to Discord, paced: this process's share of the bot's budget, each channel
within its bucket, and a count of what Discord answered.

One `DiscordPacing` per cog (per process): every send, edit, notice and typing of the cog
waits here first (`tomori.delivery.budget` says in what order and why). It also watches the
library's HTTP client, where every request of the bot passes, the library's own included: the
responses are counted (`tomori.delivery.traffic`) so the log and `/tomori status` show the pace,
the 429s by scope and the invalid requests long before Discord's ban; and on nextcord the
client's buckets are kept per channel (`tomori_cog.buckets`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from tomori.delivery.budget import ChannelPace, RequestBudget, Slot, keep_shared
from tomori.delivery.port import Urgency
from tomori.delivery.traffic import Traffic, TrafficReport
from tomori.monitoring.exporter import NO_EXPORT, Exporter
from tomori_cog.buckets import scope_buckets
from tomori_cog.library import Library

log = logging.getLogger(__name__)

WEBHOOK_WRITES = 5
"""Executes and edits one webhook takes per `WEBHOOK_WINDOW_S`: the bucket Discord's headers
show for a webhook, tighter than a channel's."""
WEBHOOK_WINDOW_S = 2.25
"""Discord's two seconds, and a margin for the clocks of two machines."""


TIDY_WITHIN_S = 60.0
"""How long a component tidy-up (`DiscordPacing.tidy`, then its edit) may wait; past it (a
backlog that long) it is dropped: the buttons stay as they are, and a press on them is told
what became of their answer."""

REACTION_WRITES = 1
"""Reactions added or removed per `REACTION_WINDOW_S` in one channel: adding and removing
share Discord's bucket, keyed by the channel."""
REACTION_WINDOW_S = 1.1
"""The second Discord's headers announce for that bucket (its real one is a quarter second),
and a tenth for the event loop, counted from the answer (`DiscordPacing.react`). A library
holds a reaction that long after an answer that left the bucket empty, nextcord whatever the
headers say, out of the pacer's sight; a removal on a route it has not linked to the add's
yet is not held and left right behind a held add: a 429. A mark is never urgent."""


class DiscordPacing:
    """This process's requests to Discord (see the module)."""

    def __init__(self, exporter: Exporter = NO_EXPORT) -> None:
        self.budget = RequestBudget()
        self._exporter = exporter
        self._pace = ChannelPace()
        self._webhook_pace = ChannelPace(WEBHOOK_WRITES, WEBHOOK_WINDOW_S)
        self._reaction_pace = ChannelPace(REACTION_WRITES, REACTION_WINDOW_S)
        self.traffic = Traffic()
        self._watched: object | None = None

    async def write(self, channel_id: int, urgency: Urgency) -> None:
        """Return when one message create or edit in `channel_id` may leave now; an answer's
        intermediate ones (`Urgency.MORE`) at the channel's steady pace."""
        async with self._pace.slot(("write", channel_id), spaced=urgency is Urgency.MORE):
            await self.budget.take(urgency)

    async def webhook_write(self, channel_id: int, webhook_id: int, urgency: Urgency) -> None:
        """Return when one execute or edit of `webhook_id` in `channel_id` may leave now:
        within the webhook's bucket, and the channel's (which Discord also keeps for webhook
        messages, unannounced), and the token's budget."""
        spaced = urgency is Urgency.MORE
        async with self._webhook_pace.slot(("webhook", webhook_id), spaced=spaced):
            await self.write(channel_id, urgency)

    async def tidy(self, channel_id: int, webhook_id: int | None = None) -> None:
        """Return when one component tidy-up of a message in `channel_id` (posted by
        `webhook_id`, if one did) may leave now (an ended answer's Stop button taken away, its
        take buttons put on or off): behind every other request of the budget, then
        when the channel's bucket (and the webhook's) has room to spare, holding no place in
        either meanwhile, so it never delays a text."""
        await self.budget.take(Urgency.TIDY)
        keys = [(self._pace, ("write", channel_id))]
        if webhook_id is not None:
            keys.append((self._webhook_pace, ("webhook", webhook_id)))
        while (wait := max(pace.spare_in(key) for pace, key in keys)) > 0:  # noqa: ASYNC110
            await asyncio.sleep(wait)  # a bucket frees itself: no event to wait on
        for pace, key in keys:
            pace.took(key)

    async def call(self, urgency: Urgency) -> None:
        """Return when one request outside the channels' message buckets (a webhook's
        creation) may leave now."""
        await self.budget.take(urgency)

    @asynccontextmanager
    async def react(self, channel_id: int) -> AsyncIterator[Slot]:
        """Enter when one reaction added or removed in `channel_id` may leave now: within the
        channel's reaction bucket, last of all the bot's requests (`Urgency.REACTION`). The
        block sends it, or says it sent none (`Slot.unused`); the bucket counts it from when
        the block ends, its answer come, so the library never has one to hold."""
        async with self._reaction_pace.slot(("reaction", channel_id)) as slot:
            await self.budget.take(Urgency.REACTION)
            yield slot

    def may_type(self) -> bool:
        """Whether a typing indicator may go now: only when no request of the bot waits (it is
        a sign of work, never worth delaying work). Taken from the budget if so."""
        return self.budget.take_if_free()

    async def read(self) -> None:
        """Return when one history or message read may leave now (reads have no channel
        bucket of their own worth keeping: they are few, and the budget orders them last)."""
        await self.budget.take(Urgency.READ)

    def refused(self, channel_id: int, retry_after_s: float) -> None:
        """Discord refused a write in `channel_id` for `retry_after_s`, past the library's own
        retries: its bucket is full until then."""
        self._pace.back_off(("write", channel_id), retry_after_s)

    def webhook_refused(self, webhook_id: int, retry_after_s: float) -> None:
        """Discord refused a write of `webhook_id` for `retry_after_s`."""
        self._webhook_pace.back_off(("webhook", webhook_id), retry_after_s)

    def report(self) -> TrafficReport:
        return self.traffic.report()

    def shared(self, live_processes: Callable[[], Awaitable[int]]) -> Coroutine[Any, Any, None]:
        """What keeps this process at its share of the token (the caller owns the task)."""
        return keep_shared(self.budget, live_processes)

    def watch(self, bot: Any, library: Library) -> None:
        """Count the responses of the bot's HTTP client and, on nextcord, scope its buckets.

        Idempotent, and a no-op until the bot has logged in (its HTTP session exists then).
        """
        http = getattr(bot, "http", None)
        session = getattr(http, "_HTTPClient__session", None)
        if session is None or session is self._watched:
            return
        self._watched = session
        if library.is_nextcord:
            scope_buckets(http)
        if not isinstance(session, aiohttp.ClientSession):
            # a library that changed its internals, or a test's stand-in: pacing still holds
            log.info(
                "the library's HTTP session is not aiohttp's: Discord's answers are not counted"
            )
            return
        session.trace_configs.append(self._trace())

    def _trace(self) -> aiohttp.TraceConfig:
        traffic = self.traffic
        exporter = self._exporter

        async def on_request_end(
            session: aiohttp.ClientSession, context: Any, params: aiohttp.TraceRequestEndParams
        ) -> None:
            response = params.response
            scope = response.headers.get("X-RateLimit-Scope")
            traffic.seen(response.status, scope)
            exporter.discord_answered(response.status, scope)
            if response.status == 429:
                log.warning(
                    "Discord refused %s %s: 429 (%s scope, retry after %ss)",
                    params.method,
                    params.url.path,
                    response.headers.get("X-RateLimit-Scope", "no"),
                    response.headers.get("Retry-After", "?"),
                )
            warning = traffic.warning()
            if warning is not None:
                log.error("%s", warning)

        trace = aiohttp.TraceConfig()
        trace.on_request_end.append(on_request_end)
        trace.freeze()
        return trace
