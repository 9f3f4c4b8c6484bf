"""The soak of the test suite, for ten minutes: mixed traffic with random stalls and kills,
then the check that no task, lock row, connection or file handle is left over.

Run: `.venv/bin/python bench/soak.py [SECONDS]` (600 by default).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    seconds = sys.argv[1] if len(sys.argv) > 1 else "600"
    repo = Path(__file__).resolve().parents[1]
    sys.exit(
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "tests/cog/test_soak.py"],
            cwd=repo,
            env={**os.environ, "TOMORI_SOAK_SECONDS": seconds},
            check=False,
        ).returncode
    )
