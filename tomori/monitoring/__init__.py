"""What the bot records of how its turns and models went, and what it tells of it.

- `metrics.py`       stalls, tool failures, each turn's tokens and outcome, kept in the database
- `exporter.py`      what an operator's monitoring reads (`TOMORI_METRICS_ADDR`), no-op by default
- `prometheus.py`    that exporter for Prometheus, on a registry of its own (the metrics extra)
- `levels.py`        the turns running and the queues' depth, read as each scrape begins
- `serving.py`       `/metrics`, `/healthz` and `/readyz`, served while a run mode runs, to
                     a bounded number of connections that must send their request soon
- `serving_logs.py`  what strangers do to that port, logged once a minute at most
- `status.py`        `/tomori status`: a server's last day, counted from the metrics
- `model_health.py`  the models turns skip for now, in the shared database, and their probes
- `why.py`           "Why no answer?": what became of a message, step by step, as plain data;
                     who may read it, and its account in words
- `why_book.py`      those steps kept in the database for a day (bounded), for any process
"""

from tomori.monitoring.metrics import Metrics
from tomori.monitoring.model_health import ModelHealthStore
from tomori.monitoring.status import ServerStatus, server_status

__all__ = ["Metrics", "ModelHealthStore", "ServerStatus", "server_status"]
