"""The limit rules over their whole input space: cooldown windows, UTC day boundaries, the
notices they allow, the estimate of tokens, and the run of bot turns."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from itertools import pairwise

from hypothesis import example, given
from hypothesis import strategies as st

from tomori.generation.results import estimated_tokens
from tomori.policy.limits import (
    DAY_S,
    BotTurns,
    Limit,
    UserLimits,
    UserRecord,
    judge,
    next_reset,
    utc_day_start,
)

TIMES = st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False)  # up to 2100
GAPS = st.lists(st.floats(min_value=0, max_value=200, allow_nan=False), min_size=1, max_size=40)
COOLDOWNS = st.floats(min_value=0.001, max_value=120, allow_nan=False)


def arrive(
    record: UserRecord, limits: UserLimits, now: float, message_id: str
) -> tuple[UserRecord, bool, bool]:
    """What the store does with one message: (the record after, admitted, told)."""
    refusal = judge(record, limits, now, message_id)
    if refusal is None:
        return replace(record, admitted_at=now, admitted_message=message_id), True, False
    if not refusal.notify:
        return record, False, False
    if refusal.limit is Limit.COOLDOWN:
        return replace(record, cooldown_noticed_at=now), False, True
    return replace(record, quota_noticed_at=now), False, True


@given(start=TIMES, gaps=GAPS, cooldown_s=COOLDOWNS)
def test_admitted_messages_are_a_cooldown_apart_and_each_window_is_told_once(
    start: float, gaps: list[float], cooldown_s: float
) -> None:
    limits = UserLimits(cooldown_s=cooldown_s)
    record = UserRecord()
    now = start
    admitted: list[float] = []
    told_in_window: dict[float, int] = {}
    for number, gap in enumerate(gaps):
        now += gap
        due = not admitted or now >= admitted[-1] + cooldown_s
        record, was_admitted, told = arrive(record, limits, now, str(number))
        assert was_admitted == due  # refused exactly inside the window, admitted after it
        if was_admitted:
            admitted.append(now)
        if told:
            told_in_window[admitted[-1]] = told_in_window.get(admitted[-1], 0) + 1
    assert all(later >= earlier + cooldown_s for earlier, later in pairwise(admitted))
    assert all(count == 1 for count in told_in_window.values())


@given(admitted_at=TIMES, cooldown_s=COOLDOWNS, after=st.floats(0, 240, allow_nan=False))
def test_a_refusal_says_when_the_window_ends(
    admitted_at: float, cooldown_s: float, after: float
) -> None:
    record = UserRecord(admitted_at=admitted_at, admitted_message="first")
    refusal = judge(record, UserLimits(cooldown_s=cooldown_s), admitted_at + after, "next")
    if admitted_at + after >= admitted_at + cooldown_s:
        assert refusal is None
    else:
        assert refusal is not None
        assert refusal.retry_at == admitted_at + cooldown_s


@given(admitted_at=TIMES, cooldown_s=COOLDOWNS)
def test_the_message_that_opened_the_window_is_never_refused(
    admitted_at: float, cooldown_s: float
) -> None:
    """Another process that received the same message asks too."""
    record = UserRecord(admitted_at=admitted_at, admitted_message="same", tokens_today=10**9)
    assert judge(record, UserLimits(cooldown_s, daily_tokens=1), admitted_at, "same") is None


@given(now=TIMES)
@example(now=2051222399.9999995)  # half a microsecond before midnight
def test_the_utc_day_starts_at_midnight_and_resets_a_day_later(now: float) -> None:
    start, reset = utc_day_start(now), next_reset(now)
    assert start <= now < reset
    assert reset - start == DAY_S
    midnight = datetime.fromtimestamp(start, UTC)
    assert (midnight.hour, midnight.minute, midnight.second) == (0, 0, 0)
    # whole seconds: fromtimestamp rounds to microseconds, past midnight for 23:59:59.9999995
    assert midnight.date() == datetime.fromtimestamp(math.floor(now), UTC).date()


@given(start=TIMES, gaps=st.lists(st.floats(0, 30_000, allow_nan=False), min_size=1, max_size=40))
def test_over_the_quota_each_utc_day_is_told_once_and_says_when_it_resets(
    start: float, gaps: list[float]
) -> None:
    limits = UserLimits(daily_tokens=100)
    record = UserRecord(tokens_today=100)
    now = start
    told_on: list[float] = []
    for number, gap in enumerate(gaps):
        now += gap
        refusal = judge(record, limits, now, str(number))
        assert refusal is not None
        assert refusal.limit is Limit.QUOTA
        assert refusal.retry_at == next_reset(now)
        record, _, told = arrive(record, limits, now, str(number))
        if told:
            told_on.append(utc_day_start(now))
    assert len(told_on) == len(set(told_on))
    assert told_on[0] == utc_day_start(start + gaps[0])


@given(used=st.integers(0, 10**6), quota=st.integers(1, 10**6))
def test_the_quota_refuses_exactly_once_it_is_spent(used: int, quota: int) -> None:
    refusal = judge(UserRecord(tokens_today=used), UserLimits(daily_tokens=quota), 0.0, "m")
    assert (refusal is not None) == (used >= quota)


@given(characters=st.integers(0, 10**7), more=st.integers(0, 10**4))
def test_the_estimate_grows_with_the_text_and_counts_any_text(characters: int, more: int) -> None:
    assert estimated_tokens(characters) <= estimated_tokens(characters + more)
    assert estimated_tokens(characters) * 4 >= characters
    assert (estimated_tokens(characters) == 0) == (characters == 0)


@given(
    limit=st.integers(1, 5),
    messages=st.lists(st.sampled_from(["bot", "human"]), max_size=60),
)
def test_bots_start_at_most_the_limit_in_a_row_between_humans(
    limit: int, messages: list[str]
) -> None:
    turns = BotTurns.capped_at(limit)
    run = 0  # bot messages since the last human one
    for author in messages:
        if author == "human":
            turns.human_spoke("c")
            run = 0
            continue
        run += 1
        allowed = turns.allows("c")
        assert allowed == (run <= limit)
        if allowed:
            turns.started("c")
