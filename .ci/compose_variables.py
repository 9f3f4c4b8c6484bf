"""compose.yaml parses, and every TOMORI_, DISCORD_ and OPENAI_ variable it names (its keys and
its ${...} references) is one docs/configuration.md lists: a renamed variable fails CI here
instead of a deploy that silently ignores it.

    python .ci/compose_variables.py compose.yaml docs/configuration.md
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

OURS = re.compile(r"\b(?:TOMORI|DISCORD|OPENAI)_[A-Z0-9_]+\b")


def named(value: object) -> set[str]:
    """Every variable of ours `value` (a parsed YAML tree) names, as a key or in a string."""
    if isinstance(value, dict):
        return {n for key, item in value.items() for n in named(key) | named(item)}
    if isinstance(value, list):
        return {n for item in value for n in named(item)}
    return set(OURS.findall(value)) if isinstance(value, str) else set()


def main(compose: Path, configuration: Path) -> int:
    tree = yaml.safe_load(compose.read_text())
    services = tree.get("services") if isinstance(tree, dict) else None
    if not isinstance(services, dict) or "tomori" not in services:
        print(f"{compose}: no tomori service", file=sys.stderr)
        return 1
    documented = set(re.findall(r"^\| `([A-Z0-9_]+)` \|", configuration.read_text(), re.M))
    unknown = sorted(named(tree) - documented)
    if unknown:
        print(
            f"{compose} names variables {configuration} does not list: {unknown}", file=sys.stderr
        )
        return 1
    print(f"ok      {compose}: {len(named(tree))} variables, each documented")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
