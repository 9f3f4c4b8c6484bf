"""`serving_metrics` as an operator's mistakes meet it: a port another process holds."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tomori.config.settings import ConfigError, Settings
from tomori.monitoring.exporter import exporter_for
from tomori.monitoring.serving import serving_metrics


async def test_a_port_another_process_holds_stops_start_up_naming_the_variable(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        settings = Settings(db_path=tmp_path / "t.db", metrics_addr=address)

        async def ready() -> None:
            return None

        with pytest.raises(ConfigError) as refused:
            async with serving_metrics(settings, exporter_for(settings), ready=ready):
                pytest.fail("served on a port another process holds")
    assert str(refused.value).startswith(
        f"TOMORI_METRICS_ADDR={address!r} is not allowed: it cannot be served on ("
    )
