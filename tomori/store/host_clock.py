"""SQLite's clock: seconds since the epoch that a step of the wall clock does not move, one
clock for every process of the host.

A wall clock steps (NTP correcting it, an admin, a virtual machine resumed). Forward by more
than a heartbeat window, a live process's heartbeat looks old and another takes its channel
mid-answer; back, every user in a cooldown is refused for as long as the step. The kernel's
boot clock (`CLOCK_BOOTTIME`: seconds since the host started, suspensions included) never
steps, and it is the same clock in every process and container of the host, which is all a
SQLite file serves. Rows must still read as times across restarts and calendar days (a day's
tokens), so the clock is the boot clock plus an offset taken once per boot: the wall clock
when the boot's first process anchored it, kept in the database (`host_clock`, migration 0016)
where the host's other processes find it. A step of the wall clock during the boot moves
nothing; the next boot takes the wall clock as it is then.

Where the system has no boot clock or boot id (anything but Linux), the wall clock is the
clock, steps and all. PostgreSQL keeps its own clock, the server's (`tomori.store.postgres`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

log = logging.getLogger(__name__)

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
"""A new random id at each boot of a Linux host, the same in all its processes and containers."""

STEPPED_WARNING_S = 60.0
"""A wall clock this far from the host's clock has stepped since the boot's anchor was taken:
the log says so once, as a process anchors, since displayed times are off by as much."""


@dataclass(frozen=True, slots=True)
class HostClock:
    """Where SQLite's clock is read: the wall clock, and the boot clock with the boot it
    counts in (None: the system has none, and the wall clock serves). Tests give their own."""

    wall: Callable[[], float]
    since_boot: Callable[[], float] | None
    boot_id: str | None


def this_host() -> HostClock:
    """This host's clocks, as the kernel gives them."""
    boot_clock = getattr(time, "CLOCK_BOOTTIME", None)
    try:
        boot_id = BOOT_ID.read_text().strip() or None
    except OSError:
        boot_id = None
    if boot_clock is None or boot_id is None:
        return HostClock(time.time, None, None)
    return HostClock(time.time, lambda: time.clock_gettime(boot_clock), boot_id)


async def anchored(connection: aiosqlite.Connection, clock: HostClock) -> Callable[[], float]:
    """The clock to read from now on: the boot clock plus this boot's offset, found in (or
    first written to) `host_clock` inside the caller's transaction; the wall clock where the
    host has no boot clock."""
    since_boot, boot_id = clock.since_boot, clock.boot_id
    if since_boot is None or boot_id is None:
        return clock.wall
    async with connection.execute(
        "SELECT offset_s FROM host_clock WHERE boot_id = ?", (boot_id,)
    ) as cursor:
        row = await cursor.fetchone()
    if row is None:
        offset = clock.wall() - since_boot()
        # An earlier boot's offset is no use: its boot clock is gone.
        await connection.execute("DELETE FROM host_clock")
        await connection.execute(
            "INSERT INTO host_clock (boot_id, offset_s) VALUES (?, ?)", (boot_id, offset)
        )
    else:
        offset = float(row[0])
        stepped = clock.wall() - (offset + since_boot())
        if abs(stepped) > STEPPED_WARNING_S:
            log.warning(
                "this host's wall clock is %.0fs %s the clock tomori keeps in SQLite since "
                "this boot's first process (it stepped since); tomori keeps to its own clock, "
                "which never steps, until the host restarts",
                abs(stepped),
                "ahead of" if stepped > 0 else "behind",
            )
    return lambda: offset + since_boot()
