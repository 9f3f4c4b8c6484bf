"""The levels of one runtime a scrape reads afresh: its turns and its channels' queues."""

from __future__ import annotations

from collections.abc import Callable

from tomori.locks import ChannelLocks
from tomori.monitoring.exporter import Exporter, Gauge

__all__ = ["lock_levels"]


def lock_levels(locks: ChannelLocks, exporter: Exporter) -> Callable[[], None]:
    """Export the turns `locks` runs and the queues' depth from now on; the callable returned
    stops it (before the locks close)."""

    async def running() -> float:
        return locks.running

    stop_running = exporter.reads(Gauge.TURNS_RUNNING, running)
    stop_queued = exporter.reads(Gauge.TURNS_QUEUED, locks.queued_count)

    def stop() -> None:
        stop_running()
        stop_queued()

    return stop
