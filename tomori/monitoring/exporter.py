"""What the bot tells an operator's monitoring as it runs, if asked to (`TOMORI_METRICS_ADDR`).

The `Metrics` of a runtime, its turns, its request budget and its database report here, all
synchronously and cheaply; the default, `NO_EXPORT`, drops everything, so a bot that serves no
metrics pays nothing and needs no client library. The Prometheus exporter
(`tomori.monitoring.prometheus`) is imported only when metrics are on: the core imports without
`prometheus_client`.

Nothing reported here carries message text, nor a user, channel or server id: every label is
drawn from a bounded set (an outcome, a kill reason, a model label of the author's chain, an MCP
server of the author's config, a Discord rate-limit scope, a database error's class), so the
number of series an operator stores stays bounded whatever the bot's servers do. A model is the
one label a server could choose (an admin's `/tomori model`, where `TOMORI_ALLOWED_MODELS`
allows a pattern): one the author did not configure is counted as `OTHER_MODEL`, so an admin's
text never becomes a series, nor shows in a scrape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from tomori.config.models import ModelChain
from tomori.config.settings import Settings

__all__ = ["NO_EXPORT", "OTHER_MODEL", "Exporter", "Gauge", "Scrape", "exporter_for"]

OTHER_MODEL = "other"
"""The model label of every model the author's configuration does not name."""


class Gauge(StrEnum):
    """A level read when the metrics are scraped, not counted as it changes."""

    REQUESTS_WAITING = "requests_waiting"
    """Requests to Discord waiting for the token's budget in this process."""
    TURNS_RUNNING = "turns_running"
    """Turns this process runs now."""
    TURNS_QUEUED = "turns_queued"
    """Triggers waiting in the channels' queues, across every process on the database."""


Read = Callable[[], Awaitable[float]]
"""How a gauge is read: awaited, within a bound, as each scrape begins."""


@dataclass(frozen=True, slots=True)
class Scrape:
    """One scrape's page, in the format its content type names."""

    body: bytes
    content_type: str


class Exporter(Protocol):
    """Where the bot reports what an operator's monitoring reads (see the module docstring)."""

    def turn_ended(self, outcome: str, took_s: float, first_text_s: float | None) -> None:
        """A turn ended so (`done`, `failed`, `stopped`), `took_s` after it began; its first
        message landed `first_text_s` after (None: none did)."""
        ...

    def turn_waited(self, waited_s: float) -> None:
        """A queued trigger's turn began, `waited_s` after it arrived (the channel's lock)."""
        ...

    def killed(self, reason: str) -> None:
        """A turn was stopped for `reason` (a `KillReason`)."""
        ...

    def model_ended(self, model: str, outcome: str, phase: str | None, fallback: bool) -> None:
        """A model's part in a turn ended with `outcome` (a timeout in `phase` is a stall);
        `fallback`: it answered after a model before it in the chain did not."""
        ...

    def tokens_used(self, model: str, prompt: int, completion: int) -> None: ...

    def mcp_called(self, server: str, outcome: str) -> None:
        """A tool of the MCP server `server` was called, and ended with `outcome`."""
        ...

    def discord_answered(self, status: int, scope: str | None) -> None:
        """Discord answered a request with `status` (a 429's `X-RateLimit-Scope`: `scope`)."""
        ...

    def database_failed(self, error: BaseException) -> None:
        """A statement or transaction failed in the database itself."""
        ...

    def reads(self, gauge: Gauge, read: Read) -> Callable[[], None]:
        """Read `gauge` by `read` from now on; the callable returned stops it (a closed
        runtime's budget or locks must not be read, nor kept alive, by a scrape)."""
        ...

    async def scrape(self) -> Scrape:
        """The gauges read afresh, then every metric as the exporter's format writes it."""
        ...


class _NoExport:
    """Drops everything: the bot serves no metrics."""

    def turn_ended(self, outcome: str, took_s: float, first_text_s: float | None) -> None:
        pass

    def turn_waited(self, waited_s: float) -> None:
        pass

    def killed(self, reason: str) -> None:
        pass

    def model_ended(self, model: str, outcome: str, phase: str | None, fallback: bool) -> None:
        pass

    def tokens_used(self, model: str, prompt: int, completion: int) -> None:
        pass

    def mcp_called(self, server: str, outcome: str) -> None:
        pass

    def discord_answered(self, status: int, scope: str | None) -> None:
        pass

    def database_failed(self, error: BaseException) -> None:
        pass

    def reads(self, gauge: Gauge, read: Read) -> Callable[[], None]:
        return lambda: None

    async def scrape(self) -> Scrape:
        return Scrape(b"", "text/plain; charset=utf-8")


NO_EXPORT: Exporter = _NoExport()


def exporter_for(settings: Settings, chain: ModelChain) -> Exporter:
    """A Prometheus exporter with a registry of its own if `TOMORI_METRICS_ADDR` is set (two
    bots in one process never share a series), else `NO_EXPORT`. Its model labels are those of
    the author's `chain` and summary model; any other model counts as `OTHER_MODEL`."""
    if settings.metrics_addr is None:
        return NO_EXPORT
    from tomori.monitoring.prometheus import PrometheusExporter

    own = {entry.label for entry in chain.entries} | {settings.summary_model}
    return PrometheusExporter(frozenset(own - {""}))
