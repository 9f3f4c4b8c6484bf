"""Where the repository is, for the tests that read its files or run a process in it, wherever
in tests/ they live."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
