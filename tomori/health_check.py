"""The container's health check: `python -m tomori.health_check` asks `/healthz` where
`TOMORI_METRICS_ADDR` serves it, and exits 0 if it answers 200, else 1 with the reason.

A wildcard address serves one family only: `0.0.0.0` IPv4's, `[::]` IPv6's (asyncio listens
IPv6-only there), so the check asks that family's loopback; a specific host is asked as it is.
It imports nothing of the bot but the address's parser, so each check stays cheap.
"""

from __future__ import annotations

import os
import sys
import urllib.request

from tomori.config.parsers import split_address

__all__ = ["CHECK_WITHIN_S", "health_url", "main"]

CHECK_WITHIN_S = 4.0
"""Inside the image's `HEALTHCHECK --timeout=5s`, so the check says why it failed."""
LOOPBACKS = {"0.0.0.0": "127.0.0.1", "::": "::1"}
"""The loopback that reaches a wildcard address, by its family."""


def health_url(address: str) -> str:
    """Where `/healthz` answers for the server listening on `address` (`host:port`)."""
    host, port = split_address(address.strip())
    host = LOOPBACKS.get(host, host)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/healthz"


def main() -> int:
    address = os.environ.get("TOMORI_METRICS_ADDR", "")
    try:
        url = health_url(address)
        with urllib.request.urlopen(url, timeout=CHECK_WITHIN_S):  # raises for a status not 2xx
            pass
    except (OSError, ValueError) as error:
        print(f"unhealthy: TOMORI_METRICS_ADDR={address!r}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
