"""`Scope`: where a server admin's setting applies, one channel or its whole server.

It sits with the settings because every store of an admin's choices (overrides, tool switches)
keys its rows by it, and both sit above this package.
"""

from __future__ import annotations

from enum import StrEnum


class Scope(StrEnum):
    """Where a `/tomori` change applies."""

    CHANNEL = "channel"
    SERVER = "server"
