"""The outage log tells each kind of failure once per outage, and a late failure is no outage.

A PostgreSQL server restarting refuses a connection asked for while it starts ("the database
system is starting up") after another connection has already got through: under load, that
refusal arrives after the success that ended the outage, and was told as a new outage.
"""

from __future__ import annotations

import logging
import re
import time

import pytest

from tomori.store.outage import OutageLog, reported


def told(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "tomori.store"]


def outage_log() -> OutageLog:
    outage = OutageLog("the-db", lambda text: text)
    outage.reporting = True
    return outage


def test_each_kind_is_told_once_and_the_end_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    outage = outage_log()
    for _ in range(3):
        outage.failed(ConnectionRefusedError("refused"), time.monotonic())
    outage.failed(TimeoutError(), time.monotonic())
    outage.succeeded()
    lines = told(caplog)
    assert [re.findall(r"out of reach \((\w+)", line)[0] for line in lines[:2]] == [
        "ConnectionRefusedError",
        "TimeoutError",
    ]
    assert len(lines) == 3
    assert "is back after" in lines[2]


def test_a_failure_of_an_attempt_begun_before_the_database_answered_is_no_new_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    outage = outage_log()
    outage.failed(ConnectionRefusedError("refused"), time.monotonic())
    asked_while_starting = time.monotonic()
    outage.succeeded()
    late = ConnectionError("the database system is starting up")
    outage.failed(late, asked_while_starting)
    assert reported(late)  # its retrier logs it quietly all the same
    assert len(told(caplog)) == 2  # the outage and its end: no second outage

    outage.failed(ConnectionRefusedError("refused"), time.monotonic())
    assert "is out of reach" in told(caplog)[-1]  # a failure begun after it is a new outage
