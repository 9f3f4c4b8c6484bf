"""The architecture as the code must keep it: the core's boundary with Discord, its packages'
order, one error root, and each package's map and vocabulary."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import tomori
import tomori_cog
from tests.support.paths import REPO
from tomori.errors import TomoriError

LAYERS = (
    "words",
    "providers",
    "config",
    "store",
    "locks",
    "delivery",
    "prompt",
    "tools",
    "summary",
    "memory",
    "generation",
    "cast",
    "monitoring",
    "policy",
    "turns",
    "commands",
    "console",
)
"""The core's packages from the bottom up: each imports only those before it."""


def _imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def test_the_core_imports_no_discord_library() -> None:
    for path in (REPO / "tomori").rglob("*.py"):
        for line, module in _imports(path):
            root = module.split(".")[0]
            assert root not in ("nextcord", "discord"), f"{path}:{line} imports {module}"


def test_the_cores_packages_import_only_those_below_them() -> None:
    for path in (REPO / "tomori").rglob("*.py"):
        relative = path.relative_to(REPO / "tomori").parts
        if len(relative) < 2:
            continue
        here = LAYERS.index(relative[0])
        for line, module in _imports(path):
            parts = module.split(".")
            if parts[0] == "tomori_cog":
                pytest.fail(f"{path}:{line}: the core imports the extension ({module})")
            if parts[0] == "tomori" and len(parts) > 1 and parts[1] in LAYERS:
                assert LAYERS.index(parts[1]) <= here, f"{path}:{line} imports {module} upward"


def _modules(package: object) -> list[str]:
    path = getattr(package, "__path__", [])
    return [info.name for info in pkgutil.walk_packages(path, f"{package.__name__}.")]  # type: ignore[attr-defined]


MODULES = [*_modules(tomori), *_modules(tomori_cog)]


def test_every_error_derives_from_the_one_root_drawn_in_its_docstring() -> None:
    drawn = tomori.errors.__doc__ or ""
    for name in MODULES:
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and not attribute.startswith("_")
            ):
                assert issubclass(value, TomoriError), f"{name}.{attribute}"
                drawn_here = re.search(rf"^[ │├└─]+{attribute}\b", drawn, re.MULTILINE)
                assert drawn_here, f"{name}.{attribute} is not drawn in tomori/errors.py"


@pytest.mark.parametrize(
    "package",
    sorted(
        {name for name in MODULES if hasattr(importlib.import_module(name), "__path__")}
        | {"tomori", "tomori_cog"}
    ),
)
def test_every_package_has_a_map_and_a_vocabulary_that_exists(package: str) -> None:
    module = importlib.import_module(package)
    doc = module.__doc__ or ""
    assert len(doc.strip().splitlines()) > 1, f"{package} has no map"
    folder = Path(module.__file__ or "").parent
    parts = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
    parts += [p for p in folder.iterdir() if (p / "__init__.py").exists()]
    for part in parts:
        assert part.stem in doc, f"{package}'s map leaves out {part.name}"
    if package != "tomori":  # the root holds only packages, and errors.py
        for name in module.__all__:
            assert hasattr(module, name), f"{package}.__all__ names {name}, which it lacks"
