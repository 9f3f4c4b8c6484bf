"""A channel's lock judged inside a caller's transaction: its row read, its owner asked whether
it is alive, the rule (`rules.judge`) applied, and a takeover or a stale lock logged."""

from __future__ import annotations

import logging

from tomori.locks import rules
from tomori.locks.instances import InstanceRows
from tomori.locks.rules import LockRow, LockState
from tomori.store.base import Transaction

log = logging.getLogger("tomori.locks")


class LockJudge:
    """What state a channel's lock is in, as this process (`instances.instance_id`) sees it."""

    def __init__(self, instances: InstanceRows, lock_timeout_s: float) -> None:
        self._instances = instances
        self._lock_timeout_s = lock_timeout_s

    async def __call__(
        self, tx: Transaction, channel_id: str, given_up_turn_id: str | None, now: float
    ) -> LockState:
        row = await tx.fetchone(
            "SELECT owner, turn_id, last_progress_at, watchdogs, stop_requested_by"
            " FROM channel_locks WHERE channel_id = ?",
            (channel_id,),
        )
        lock = None if row is None else LockRow(*row)
        alive = lock is None or lock.owner == self._instances.instance_id
        up_since = float("-inf")  # only another's row is judged on time
        if lock is not None and not alive:
            up_since = await self._instances.up_since(tx)
            alive = await self._instances.is_alive(tx, lock.owner, now, up_since)
        verdict = rules.judge(
            lock,
            me=self._instances.instance_id,
            given_up_turn_id=given_up_turn_id,
            owner_alive=alive,
            now=now,
            up_since=up_since,
            lock_timeout_s=self._lock_timeout_s,
        )
        if lock is not None and verdict is LockState.OWNER_GONE:
            log.warning(
                "taking over channel %s from instance %s, which is gone", channel_id, lock.owner
            )
        elif lock is not None and verdict is LockState.STALE:
            log.warning(
                "superseding the stale lock of channel %s held by instance %s",
                channel_id,
                lock.owner,
            )
        return verdict
