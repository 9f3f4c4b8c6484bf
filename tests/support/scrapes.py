"""What Prometheus would read from a bot's `/metrics`, parsed by the client's own parser, and
`/healthz` and `/readyz` as an orchestrator's probe meets them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True, slots=True)
class Scraped:
    """One scrape: every sample, by its name and labels."""

    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]

    def value(self, name: str, **labels: str) -> float:
        """The sample `name` with exactly `labels`; 0 if the scrape has none (a series appears
        once first counted)."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def total(self, name: str, **labels: str) -> float:
        """The sum of the samples `name` whose labels include `labels`."""
        wanted = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and wanted <= ls)

    def label_values(self) -> set[str]:
        return {value for (_, labels) in self.samples for _, value in labels}

    def names(self) -> set[str]:
        return {name for name, _ in self.samples}


async def scrape(base_url: str) -> Scraped:
    async with aiohttp.ClientSession() as session, session.get(f"{base_url}/metrics") as reply:
        assert reply.status == 200, await reply.text()
        assert reply.headers["Content-Type"].startswith("text/plain")
        text = await reply.text()
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return Scraped(samples)


async def probe(base_url: str, path: str) -> tuple[int, str]:
    """`path`'s status and text, as a health check reads them."""
    async with aiohttp.ClientSession() as session, session.get(f"{base_url}{path}") as reply:
        return reply.status, await reply.text()


def leaks(scraped: Scraped, forbidden: Iterable[str]) -> list[str]:
    """The label values that are, or hold, any of `forbidden` (an id, a word of a message)."""
    return [
        value
        for value in sorted(scraped.label_values())
        for bad in forbidden
        if bad and (bad in value or value in (bad,))
    ]
