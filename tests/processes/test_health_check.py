"""The image's HEALTHCHECK, its command line as the Dockerfile writes it, run beside a bot's
metrics server on each kind of address an operator sets TOMORI_METRICS_ADDR to."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

import pytest

from tests.support.command import environment
from tests.support.paths import REPO
from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.monitoring.exporter import exporter_for
from tomori.monitoring.serving import serving_metrics

CHAIN = ModelChain.parse("openai:m", {"OPENAI_API_KEY": "sk-test"})


def health_check_command() -> list[str]:
    """The Dockerfile's HEALTHCHECK CMD, its `python` this test's interpreter."""
    line = next(
        line
        for line in (REPO / "Dockerfile").read_text().splitlines()
        if line.startswith("HEALTHCHECK")
    )
    command: list[str] = json.loads(line.split(" CMD ", 1)[1])
    assert command[0] == "python"
    return [sys.executable, *command[1:]]


async def health_check(address: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *health_check_command(),
        env=environment(TOMORI_METRICS_ADDR=address),
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(10):
        _, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, err.decode()


def free_port(family: socket.AddressFamily, host: str) -> int:
    with socket.socket(family) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("host", "family", "bind"),
    [
        ("0.0.0.0", socket.AF_INET, "0.0.0.0"),
        ("[::]", socket.AF_INET6, "::"),
        ("127.0.0.1", socket.AF_INET, "127.0.0.1"),
        ("[::1]", socket.AF_INET6, "::1"),
    ],
)
async def test_the_images_health_check_finds_the_server_on_the_address_it_listens_on(
    tmp_path: Path, host: str, family: socket.AddressFamily, bind: str
) -> None:
    address = f"{host}:{free_port(family, bind)}"
    settings = Settings(db_path=tmp_path / "t.db", metrics_addr=address)

    async def ready() -> None:
        return None

    async with serving_metrics(settings, exporter_for(settings, CHAIN), ready=ready):
        code, err = await health_check(address)
        assert code == 0, err
    code, err = await health_check(address)  # the process gone: unhealthy, saying why
    assert code == 1
    assert err.startswith(f"unhealthy: TOMORI_METRICS_ADDR={address!r}: ")
