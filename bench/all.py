"""Run every benchmark and write the figures, with the machine they came from, to RESULTS.md.

Run: `.venv/bin/python bench/all.py` (about seven minutes). Each script runs in a process of its
own so that none inherits another's memory or warm caches.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "stream_once_bench.py",
    "providers_bench.py",
    "delivery_bench.py",
    "splitting_bench.py",
    "cog_bench.py",
    "locks_bench.py",
    "history_bench.py",
]


def machine() -> str:
    cpu = "unknown cpu"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), "
        f"Python {platform.python_version()}"
    )


def kept_sections(results: Path) -> list[str]:
    """The sections of RESULTS.md that scripts outside SCRIPTS wrote (by hand, with the
    command that reproduces them): this run does not measure them, so it keeps them."""
    if not results.exists():
        return []
    kept = []
    for section in results.read_text().split("\n## ")[1:]:
        script = section.split(" ", 1)[0].split("\n", 1)[0]
        if script not in SCRIPTS:
            kept.append(f"## {section.rstrip()}\n")
    return kept


def main() -> int:
    sections = []
    for script in SCRIPTS:
        print(f"== {script}", flush=True)
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, str(HERE / script)], capture_output=True, text=True, check=False
        )
        output = result.stdout.rstrip() or result.stderr.strip().splitlines()[-1]
        print(output, flush=True)
        sections.append((script, output, time.monotonic() - started, result.returncode))
    report = [
        f"# Benchmark results\n\nMachine: {machine()}. Date: {time.strftime('%Y-%m-%d')}.",
        "Regenerate with `.venv/bin/python bench/all.py`; it keeps the sections of scripts it",
        "does not run, each with its own command.\n",
    ]
    for script, output, seconds, code in sections:
        status = "" if code == 0 else f" (exit code {code})"
        report.append(f"## {script} ({seconds:.0f} s){status}\n\n```\n{output}\n```\n")
    report += kept_sections(HERE / "RESULTS.md")
    (HERE / "RESULTS.md").write_text("\n".join(report))
    return max(code for _, _, _, code in sections)


if __name__ == "__main__":
    sys.exit(main())
