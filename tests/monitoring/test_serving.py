"""`serving_metrics` as an operator's mistakes meet it (a port another process holds) and as a
stranger on the network does (connections that never finish a request)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from tomori.config.models import ModelChain
from tomori.config.settings import ConfigError, Settings
from tomori.monitoring import serving
from tomori.monitoring.exporter import exporter_for
from tomori.monitoring.serving import serving_metrics

CHAIN = ModelChain.parse("openai:m,openai:n", {"OPENAI_API_KEY": "sk-test"})


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
            async with serving_metrics(settings, exporter_for(settings, CHAIN), ready=ready):
                pytest.fail("served on a port another process holds")
    assert str(refused.value).startswith(
        f"TOMORI_METRICS_ADDR={address!r} is not allowed: it cannot be served on ("
    )


async def test_a_connection_without_a_whole_request_is_closed_within_the_read_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A silent connection, a half-sent request and a keep-alive connection left idle after
    its answer: each holds a file descriptor, so each is closed once `READ_WITHIN_S` passed."""
    monkeypatch.setattr(serving, "READ_WITHIN_S", 0.5)
    settings = Settings(db_path=tmp_path / "t.db", metrics_addr="127.0.0.1:0")

    async def ready() -> None:
        return None

    async with serving_metrics(settings, exporter_for(settings, CHAIN), ready=ready) as url:
        assert url is not None
        host, port = url.removeprefix("http://").rsplit(":", 1)
        silent = await asyncio.open_connection(host, int(port))
        half = await asyncio.open_connection(host, int(port))
        half[1].write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        idle = await asyncio.open_connection(host, int(port))
        idle[1].write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        async with asyncio.timeout(3):
            assert await silent[0].read() == b""
            assert await half[0].read() == b""
            assert (await idle[0].read()).startswith(b"HTTP/1.1 200 OK")
        for _, writer in (silent, half, idle):
            writer.close()
