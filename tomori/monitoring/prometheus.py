"""The `Exporter` that Prometheus scrapes, through its official client (the `metrics` extra).

Every metric lives in a `CollectorRegistry` of this exporter's own, never the client's global
one: two bots in one process (or two tests) each count their own. The names and labels are
listed in docs/operations.md, whose Grafana dashboard a test holds to them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import prometheus_client as client
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram

from tomori.generation.results import StreamStatus
from tomori.monitoring.exporter import OTHER_MODEL, Gauge, Read, Scrape
from tomori.store.outage import reported

log = logging.getLogger(__name__)

__all__ = ["READ_WITHIN_S", "PrometheusExporter"]

READ_WITHIN_S = 1.0
"""How long a scrape waits for each gauge (the queue's is a database query): a gauge not read
within it keeps its last value, and the scrape goes on."""
LATENCY_BUCKETS_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)
WAIT_BUCKETS_S = (0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0)
SCOPES = frozenset({"global", "user", "shared"})
"""Discord's rate-limit scopes; a header with anything else is counted as `other`."""


class PrometheusExporter:
    """`tomori.monitoring.exporter.Exporter` over a registry of its own; `models`: the model
    labels it counts by name (the author's), every other model counted as `OTHER_MODEL`."""

    def __init__(self, models: frozenset[str]) -> None:
        self._models = models
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self._turns = Counter(
            "tomori_turns", "Turns by how they ended.", ["outcome"], registry=registry
        )
        self._first_text = Histogram(
            "tomori_turn_first_text_seconds",
            "From a turn's start to its first message landing in the channel.",
            buckets=LATENCY_BUCKETS_S,
            registry=registry,
        )
        self._took = Histogram(
            "tomori_turn_seconds",
            "From a turn's start to its end.",
            buckets=LATENCY_BUCKETS_S,
            registry=registry,
        )
        self._waited = Histogram(
            "tomori_turn_lock_wait_seconds",
            "How long a queued trigger waited for its channel's lock.",
            buckets=WAIT_BUCKETS_S,
            registry=registry,
        )
        self._kills = Counter(
            "tomori_kills", "Turns stopped, by what stopped them.", ["reason"], registry=registry
        )
        self._model_parts = Counter(
            "tomori_model_parts",
            "Each model's part in a turn, by how it ended.",
            ["model", "outcome"],
            registry=registry,
        )
        self._stalls = Counter(
            "tomori_model_stalls",
            "A model that went quiet past its budget, before its first token or after.",
            ["model", "phase"],
            registry=registry,
        )
        self._fallbacks = Counter(
            "tomori_model_fallbacks",
            "Answers given by a model after an earlier model of the chain gave none.",
            ["model"],
            registry=registry,
        )
        self._tokens = Counter(
            "tomori_tokens", "Tokens by model and kind.", ["model", "kind"], registry=registry
        )
        self._mcp = Counter(
            "tomori_mcp_calls",
            "Calls of MCP tools, by server and outcome.",
            ["server", "outcome"],
            registry=registry,
        )
        self._requests = Counter(
            "tomori_discord_requests",
            "Responses this process received from Discord's API.",
            registry=registry,
        )
        self._rate_limited = Counter(
            "tomori_discord_rate_limited",
            "429s from Discord, by their X-RateLimit-Scope.",
            ["scope"],
            registry=registry,
        )
        self._database_errors = Counter(
            "tomori_database_errors",
            "Statements and transactions the database failed, by the error's class.",
            ["kind"],
            registry=registry,
        )
        self._levels = {
            Gauge.REQUESTS_WAITING: client.Gauge(
                "tomori_discord_requests_waiting",
                "Requests to Discord waiting for the token's budget in this process.",
                registry=registry,
            ),
            Gauge.TURNS_RUNNING: client.Gauge(
                "tomori_turns_running", "Turns this process runs now.", registry=registry
            ),
            Gauge.TURNS_QUEUED: client.Gauge(
                "tomori_turns_queued",
                "Triggers waiting in the channels' queues, across the bot's processes.",
                registry=registry,
            ),
        }
        self._reads: dict[Gauge, Read] = {}
        self._unread: set[Gauge] = set()
        """The gauges whose last read failed: told once, not at every scrape of an outage
        (nor at all if the database's outage log told it)."""

    def turn_ended(self, outcome: str, took_s: float, first_text_s: float | None) -> None:
        self._turns.labels(outcome).inc()
        self._took.observe(took_s)
        if first_text_s is not None:
            self._first_text.observe(first_text_s)

    def turn_waited(self, waited_s: float) -> None:
        self._waited.observe(max(0.0, waited_s))

    def killed(self, reason: str) -> None:
        self._kills.labels(reason).inc()

    def model_ended(self, model: str, outcome: str, phase: str | None, fallback: bool) -> None:
        model = self._label(model)
        self._model_parts.labels(model, outcome).inc()
        if outcome == StreamStatus.TIMEOUT:
            self._stalls.labels(model, phase or "unknown").inc()
        if fallback:
            self._fallbacks.labels(model).inc()

    def tokens_used(self, model: str, prompt: int, completion: int) -> None:
        model = self._label(model)
        self._tokens.labels(model, "prompt").inc(prompt)
        self._tokens.labels(model, "completion").inc(completion)

    def _label(self, model: str) -> str:
        return model if model in self._models else OTHER_MODEL

    def mcp_called(self, server: str, outcome: str) -> None:
        self._mcp.labels(server, outcome).inc()

    def discord_answered(self, status: int, scope: str | None) -> None:
        self._requests.inc()
        if status == 429:
            said = (scope or "user").lower()  # no header: a route's own bucket, as Traffic says
            self._rate_limited.labels(said if said in SCOPES else "other").inc()

    def database_failed(self, error: BaseException) -> None:
        self._database_errors.labels(type(error).__name__).inc()

    def reads(self, gauge: Gauge, read: Read) -> Callable[[], None]:
        self._reads[gauge] = read

        def stop() -> None:
            if self._reads.get(gauge) is read:
                del self._reads[gauge]
                self._unread.discard(gauge)
                self._levels[gauge].set(0)

        return stop

    async def scrape(self) -> Scrape:
        for gauge, read in list(self._reads.items()):
            try:
                async with asyncio.timeout(READ_WITHIN_S):
                    self._levels[gauge].set(await read())
                self._unread.discard(gauge)
            except Exception as error:
                if gauge not in self._unread and not reported(error):
                    log.info(
                        "could not read %s for a scrape (%r): it keeps its last value until "
                        "a read works",
                        gauge,
                        error,
                    )
                self._unread.add(gauge)
        return Scrape(client.generate_latest(self.registry), CONTENT_TYPE_LATEST)
