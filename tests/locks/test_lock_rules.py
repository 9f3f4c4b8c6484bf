"""The lock rules as functions of plain values: each rule's cases, and what holds for any times."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tomori.locks import rules
from tomori.locks.rules import InstanceRow, LockRow, LockState

ME, OTHER = "me", "other"
TIMEOUT = 180.0


def lock(owner: str = OTHER, turn: str = "t", progress: float = 0.0, watchdogs: int = 0,
         stop: str | None = None) -> LockRow:  # fmt: skip
    return LockRow(owner, turn, progress, watchdogs, stop)


def judge(row: LockRow | None, now: float = 10.0, alive: bool = True,
          given_up: str | None = None) -> LockState:  # fmt: skip
    return rules.judge(
        row, me=ME, given_up_turn_id=given_up, owner_alive=alive, now=now, lock_timeout_s=TIMEOUT
    )


@pytest.mark.parametrize(
    ("row", "kwargs", "verdict"),
    [
        (None, {}, LockState.FREE),
        (lock(), {}, LockState.HELD),
        (lock(stop="42"), {}, LockState.STOPPING),
        (lock(), {"alive": False}, LockState.OWNER_GONE),
        (lock(), {"now": TIMEOUT + 1}, LockState.STALE),
        (lock(watchdogs=1), {"now": TIMEOUT * 10}, LockState.HELD),  # a watchdog exempts it
        (lock(owner=ME), {"now": TIMEOUT * 10}, LockState.HELD),  # ours: its lease judges it
        (lock(owner=ME, turn="t"), {"given_up": "t"}, LockState.ABANDONED_HERE),
        (lock(owner=ME, turn="next"), {"given_up": "t"}, LockState.HELD),  # handed on since
    ],
)
def test_each_verdict(row: LockRow | None, kwargs: dict[str, object], verdict: LockState) -> None:
    assert judge(row, **kwargs) is verdict  # type: ignore[arg-type]


def test_only_stale_and_abandoned_locks_discard_their_queue() -> None:
    assert {v for v in LockState if v.discards_queue} == {LockState.STALE, LockState.ABANDONED_HERE}
    assert {v for v in LockState if not v.is_free} == {LockState.HELD, LockState.STOPPING}


times = st.floats(min_value=0, max_value=1e10, allow_nan=False)


@given(progress=times, now=times, watchdogs=st.integers(min_value=1, max_value=5))
def test_a_live_owners_lock_under_a_watchdog_is_never_taken(
    progress: float, now: float, watchdogs: int
) -> None:
    assert judge(lock(progress=progress, watchdogs=watchdogs), now=now) is LockState.HELD


@given(progress=times, skew=st.floats(min_value=-3600, max_value=3600, allow_nan=False))
def test_staleness_depends_only_on_how_long_ago_on_one_clock(progress: float, skew: float) -> None:
    """A row's age, not any host's clock, decides: shifting both times alike changes nothing."""
    for idle in (TIMEOUT - 1, TIMEOUT + 1):
        plain = judge(lock(progress=progress), now=progress + idle)
        shifted = judge(lock(progress=progress + skew), now=progress + skew + idle)
        assert plain is shifted


def instance(host: str = "a", pid: int = 7, token: str = "7:1", beat: float = 0.0) -> InstanceRow:
    return InstanceRow(host, pid, token, beat)


def alive(row: InstanceRow | None, now: float, token: str | None = "7:1") -> bool:
    return rules.is_alive(
        row, here_host="a", token_of=lambda pid: token, now=now, lock_timeout_s=TIMEOUT
    )


def test_an_owner_is_alive_until_it_misses_its_heartbeats_or_its_process_is_gone() -> None:
    window = rules.dead_after_s(TIMEOUT)
    assert window == TIMEOUT  # three heartbeats of a third of the lock timeout
    assert alive(instance(), now=window)
    assert not alive(instance(), now=window + 1)
    assert not alive(instance(), now=0, token=None)  # its process is gone from this host
    assert not alive(instance(), now=0, token="7:2")  # its pid names another process now
    assert alive(instance(host="b"), now=0, token=None)  # another host: heartbeats decide
    assert not alive(None, now=0)


def test_a_queued_trigger_is_too_old_past_the_queue_age() -> None:
    assert not rules.too_old(received_at=100, now=700, queue_max_age_s=600)
    assert rules.too_old(received_at=100, now=701, queue_max_age_s=600)


def test_heartbeats_come_thrice_a_lock_timeout_but_at_most_once_a_second() -> None:
    assert rules.heartbeat_interval_s(180) == 60
    assert rules.heartbeat_interval_s(0.05) == rules.MIN_HEARTBEAT_INTERVAL_S
