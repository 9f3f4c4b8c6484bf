"""Which process this is, in words another process on the same host can check."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    host: str
    pid: int
    token: str


def process_token(pid: int) -> str | None:
    """A string naming this exact process (pid plus start time), or None if it is not running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return _token_without_proc(pid)
    # Field 22 is the start time; the command name (field 2) may hold spaces, so split after it.
    start_time = stat.rsplit(")", 1)[1].split()[19]
    return f"{pid}:{start_time}"


def _token_without_proc(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return str(pid)


def current_process() -> ProcessIdentity:
    pid = os.getpid()
    return ProcessIdentity(socket.gethostname(), pid, process_token(pid) or str(pid))
