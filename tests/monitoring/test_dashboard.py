"""docs/grafana/tomori.json and docs/operations.md's table against a real scrape: every series the
dashboard queries and the table lists is one `/metrics` serves, and every one it serves is
listed, so a renamed metric cannot leave an operator's panel empty."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support.paths import REPO
from tests.support.scrapes import Scraped, scrape
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.monitoring.exporter import Exporter, Gauge, exporter_for
from tomori.monitoring.serving import serving_metrics

CHAIN = ModelChain.parse("openai:m,openai:n", {"OPENAI_API_KEY": "sk-test"})

NAME = re.compile(r"\btomori_[a-z_]+\b")
HISTOGRAM_PARTS = ("_bucket", "_count", "_sum")


def every_series_counted_once(exporter: Exporter) -> None:
    """Each call an exporter takes, once: every labelled series then shows in a scrape."""
    exporter.turn_ended("done", 2.0, 1.0)
    exporter.turn_waited(0.5)
    exporter.killed("kill")
    exporter.model_ended("openai:m", "timeout", "first_token", fallback=False)
    exporter.model_ended("openai:n", "completed", None, fallback=True)
    exporter.tokens_used("openai:n", 10, 5)
    exporter.mcp_called("files", "used")
    exporter.discord_answered(429, "global")
    exporter.database_failed(OSError("refused"))

    async def one() -> float:
        return 1.0

    for gauge in Gauge:
        exporter.reads(gauge, one)


async def served(tmp_path: Path) -> Scraped:
    settings = Settings(db_path=tmp_path / "t.db", metrics_addr="127.0.0.1:0")
    exporter = exporter_for(settings, CHAIN)
    every_series_counted_once(exporter)

    async def ready() -> None:
        return None

    async with serving_metrics(settings, exporter, ready=ready) as url:
        assert url is not None
        return await scrape(url)


def queried(text: str) -> set[str]:
    return set(NAME.findall(text))


async def test_every_series_the_dashboard_queries_is_served(tmp_path: Path) -> None:
    dashboard = json.loads((REPO / "docs" / "grafana" / "tomori.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    names = queried("\n".join(exprs))
    scraped = await served(tmp_path)
    assert names - scraped.names() == set()
    assert len(names) >= 15  # every metric has a panel, bar the histograms' parts


async def test_the_operations_table_lists_exactly_the_series_served(tmp_path: Path) -> None:
    page = (REPO / "docs" / "operations.md").read_text()
    section = page.split("## Metrics and health", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| `tomori_")]
    listed = {NAME.findall(row)[0] for row in rows}
    scraped = await served(tmp_path)
    served_names = {
        name.removesuffix(part) if name.endswith(part) else name
        for name in scraped.names()
        if not name.endswith("_created")  # the client's own companion of each counter
        for part in [next((p for p in HISTOGRAM_PARTS if name.endswith(p)), "")]
    }
    assert listed == served_names
