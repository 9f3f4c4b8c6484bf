"""Which models turns skip now, kept in the database every process shares, and the probes that
decide when a skipped model is trusted again (the rule is `tomori.generation.health`).

A model is known by its endpoint and its label (`model_health`, migration 0017): where this
process asks it (`Credentials.endpoint`) and `provider:model`, so a model of one name at two
servers is two models, and a process reads only the marks of the endpoints it asks. A model
marked sick is skipped by every process's turns: the
mark is this process's at once, and the others' at their next read, within `REFRESH_S`. Each
process reads the table every `REFRESH_S` and claims, in one statement, a sick model whose probe
is due and nobody probes; so one probe runs at a time across the bot, and one that dies with its
process is claimed again once its claim lapses. A probe is one tiny streamed request under the
configured budgets: an answer deletes the row (the model is trusted again), anything else puts
the next probe `TOMORI_MODEL_PROBE_INTERVAL_MS` later. Every change is logged once, with how
long the model was skipped.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable

from tomori.generation.health import Ailment, Diagnosis, Sick
from tomori.store import Database, Row
from tomori.store.outage import reported

log = logging.getLogger(__name__)

REFRESH_S = 1.0
"""How often the table is read, and due probes claimed."""

Prober = Callable[[str], Awaitable[bool | None]]
"""Ask a model (by its provider:model label) a tiny question: True if it answered in time,
False if not, None if this process cannot ask it (no provider configured for it)."""


class ModelHealthStore:
    """`ModelHealth` over the database, with the loop that refreshes it and probes."""

    def __init__(
        self,
        database: Database,
        instance_id: str,
        probe: Prober,
        endpoint_of: Callable[[str], str],
        *,
        interval_s: float,
        probe_budget_s: float,
    ) -> None:
        """`probe_budget_s`: the longest a probe may take (its first-token budget and more):
        a claim lapses after it, should the probing process die. `endpoint_of`: where this
        process asks a provider's models (by the provider's name)."""
        self._db = database
        self._me = instance_id
        self._probe = probe
        self._endpoint_of = endpoint_of
        self._interval_s = interval_s
        self._claim_s = probe_budget_s + 2 * REFRESH_S
        self._known: dict[str, Sick] = {}
        """The table as last read."""
        self._written: dict[str, tuple[Sick | None, float]] = {}
        """What this process decided (None: found well), until the table surely says it too:
        a monotonic time, `math.inf` while the write is under way."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.Task[None] | None = None

    # -- ModelHealth ----------------------------------------------------------------------

    def sick(self, label: str) -> Sick | None:
        written = self._written.get(label)
        if written is not None:
            if time.monotonic() < written[1]:
                return written[0]
            del self._written[label]  # read back since: the table says it
        return self._known.get(label)

    def attempted(self, label: str, verdict: Diagnosis, ailment: Ailment | None) -> None:
        if verdict is Diagnosis.SICK and ailment is not None:
            if self.sick(label) is None:
                now = time.time()  # this process's clock, until the table's own is read
                marked = Sick(label, ailment, now, now + self._interval_s)
                self._decide(label, marked, self._mark_sick(label, ailment))
        elif verdict is Diagnosis.WELL and self.sick(label) is not None:
            self._decide(label, None, self._mark_well(label, "a turn"))

    def _decide(self, label: str, sick: Sick | None, write: Awaitable[None]) -> None:
        """Hold `sick` as the model's health here at once, and until a read after `write`."""
        self._written[label] = (sick, math.inf)

        async def written() -> None:
            try:
                await write
            finally:
                self._written[label] = (sick, time.monotonic() + 2 * REFRESH_S)

        self._own(written(), f"recording the health of model {label}")

    # -- what the status shows --------------------------------------------------------------

    def skipped(self) -> list[Sick]:
        """The models turns skip now, by label."""
        labels = sorted({*self._known, *self._written})  # (sick() drops what expired)
        return [sick for label in labels if (sick := self.sick(label)) is not None]

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._loop = asyncio.create_task(self._keep_up(), name="tomori-model-health")

    async def close(self) -> None:
        tasks = [*self._tasks, *([self._loop] if self._loop is not None else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _keep_up(self) -> None:
        failing = False
        while True:
            try:
                await self._refresh()
                await self._claim_due_probes()
                failing = False
            except Exception as error:
                if not failing and not reported(error):
                    log.warning("reading the models' health failed; retrying", exc_info=True)
                failing = True
            await asyncio.sleep(REFRESH_S)

    def _own(self, work: Awaitable[None], what: str) -> None:
        async def logged() -> None:
            try:
                await work
            except Exception as error:
                if not reported(error):
                    log.warning("%s failed", what, exc_info=True)

        task = asyncio.create_task(logged(), name="tomori-model-health-write")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the table -----------------------------------------------------------------------------

    def _endpoint(self, label: str) -> str:
        """Where this process asks the model `label` names."""
        return self._endpoint_of(label.partition(":")[0])

    async def _refresh(self) -> None:
        rows = await self._db.fetchall(
            "SELECT endpoint, model, ailment, sick_since, probe_at FROM model_health"
        )
        self._known = {
            row["model"]: _sick(row)
            for row in rows
            if row["endpoint"] == self._endpoint(row["model"])
        }

    async def _mark_sick(self, label: str, ailment: Ailment) -> None:
        async with self._db.transaction(label) as tx:
            now = await tx.now()
            added = await tx.execute(
                "INSERT INTO model_health (endpoint, model, ailment, sick_since, probe_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (endpoint, model) DO NOTHING",
                (self._endpoint(label), label, str(ailment), now, now + self._interval_s),
            )
        if added:
            log.warning(
                "model %s %s: turns skip it and start on the next model of their chain; "
                "a probe in %gs decides when it is trusted again",
                label,
                ailment,
                self._interval_s,
            )

    async def _mark_well(self, label: str, by: str) -> None:
        async with self._db.transaction(label) as tx:
            now = await tx.now()
            key = (self._endpoint(label), label)
            row = await tx.fetchone(
                "SELECT sick_since FROM model_health WHERE endpoint = ? AND model = ?", key
            )
            await tx.execute("DELETE FROM model_health WHERE endpoint = ? AND model = ?", key)
        if row is not None:
            skipped_s = now - float(row["sick_since"])
            log.warning("model %s answered %s: trusted again after %.0fs", label, by, skipped_s)

    async def _claim_due_probes(self) -> None:
        for label in list(self._known):
            claimed = False
            async with self._db.transaction(label) as tx:
                now = await tx.now()
                claimed = bool(
                    await tx.execute(
                        "UPDATE model_health SET probing_by = ?, probe_until = ?"
                        " WHERE endpoint = ? AND model = ? AND probe_at <= ?"
                        " AND (probing_by IS NULL OR probe_until < ?)",
                        (self._me, now + self._claim_s, self._endpoint(label), label, now, now),
                    )
                )
            if claimed:
                self._own(self._probe_now(label), f"probing model {label}")

    async def _probe_now(self, label: str) -> None:
        answered = await self._probe(label)
        if answered:
            self._decide(label, None, self._mark_well(label, "a probe"))
            return
        async with self._db.transaction(label) as tx:
            now = await tx.now()
            # Not answered, or not askable here (another process may be able to): the next
            # probe comes an interval later, by whoever claims it then.
            await tx.execute(
                "UPDATE model_health SET probe_at = ?, probing_by = NULL, probe_until = NULL"
                " WHERE endpoint = ? AND model = ? AND probing_by = ?",
                (
                    now + (self._interval_s if answered is False else REFRESH_S),
                    self._endpoint(label),
                    label,
                    self._me,
                ),
            )
        if answered is False:
            log.info("model %s did not answer its probe; skipped %gs more", label, self._interval_s)


def _sick(row: Row) -> Sick:
    return Sick(
        row["model"], Ailment(row["ailment"]), float(row["sick_since"]), float(row["probe_at"])
    )
