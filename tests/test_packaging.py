"""What `pip install` of this repository gives a bot author: typed packages, the licence.

The wheel is built as pip builds it from a git URL or a path, and a bot author's script is
type-checked against the installed wheel (not against this checkout's sources), as the bot
author's own mypy would see it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.command import HIDING, RUN_COMMAND, command_without, environment
from tests.support.markdown import python_block, sections
from tests.support.paths import REPO
from tomori.words import LOCALES

pytestmark = pytest.mark.slow  # builds the wheel and runs mypy on it

BOT_AUTHOR = """
import nextcord
from nextcord.ext import commands

from tomori.config.settings import Settings as CoreSettings
from tomori_cog import ModelChain, Settings, add_tomori

bot = commands.Bot(intents=nextcord.Intents.default())
add_tomori(bot, settings=Settings(history_limit=10), chain=ModelChain.from_env({}))
add_tomori(bot, settings=CoreSettings(history_limit=10))
"""
BOTS = {
    "nextcord": "import nextcord\nfrom nextcord.ext import commands\n\n"
    "bot = commands.Bot(intents=nextcord.Intents.default())\n",
    "discordpy": "import discord\nfrom discord.ext import commands\n\n"
    "bot = commands.Bot(command_prefix='!', intents=discord.Intents.default())\n",
}


SNIPPETS = (
    ("docs/configuration.md", "Settings"),
    ("docs/extending.md", "Your own tools"),
    ("docs/operations.md", "Many channels at once"),
    ("docs/operations.md", "An address in code"),
)
"""The docs' sections whose Python a bot author pastes into a bot of either library."""


def docs_code(page: str, section: str) -> str:
    """The first Python block of `page`'s `section`."""
    (found,) = [part for part in sections((REPO / page).read_text()) if part.title == section]
    return python_block(found)


def bot_author_scripts(folder: Path) -> list[Path]:
    """What a bot author writes: the README's import, and the docs' snippets in a bot of each
    library."""
    scripts = [folder / "bot_author.py"]
    scripts[0].write_text(BOT_AUTHOR)
    for page, section in SNIPPETS:
        for library, bot in BOTS.items():
            script = folder / f"{section.replace(' ', '_').lower()}_{library}.py"
            script.write_text(bot + docs_code(page, section))
            scripts.append(script)
    return scripts


NOT_IN_A_CLONE = (".git", ".venv*", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis")
"""What a checkout holds that a clean clone does not: a build/ folder left in it would leak."""
README = REPO / "README.md"


ONE_WHEEL = pytest.mark.xdist_group("wheel")
"""On the tests that read the wheel: one worker runs them all, so it is built once, not on each."""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = out / "source"  # a clean copy: a build/ folder left in the checkout would leak
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*NOT_IN_A_CLONE))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if built.returncode != 0:
        pytest.skip(f"pip could not build the wheel here: {built.stderr[-500:]}")
    (path,) = out.glob("tomori_cog-*.whl")
    return path


@ONE_WHEEL
def test_the_wheel_ships_both_packages_typed_and_the_licence(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "tomori/py.typed" in names
    assert "tomori_cog/py.typed" in names
    for engine in ("sqlite", "postgres"):  # the schema ships too
        assert f"tomori/migrations/{engine}/0001_channel_locks.sql" in names
    assert any(name.endswith("licenses/LICENSE") for name in names)


@ONE_WHEEL
def test_the_wheel_installs_the_tomori_command(wheel: Path) -> None:
    """pip makes `tomori` from the wheel's entry points (.ci/wheel runs it installed)."""
    archive = zipfile.ZipFile(wheel)
    (points,) = [name for name in archive.namelist() if name.endswith("/entry_points.txt")]
    assert "[console_scripts]\ntomori = tomori_cog.cli:entry" in archive.read(points).decode()
    assert "tomori_cog/__main__.py" in archive.namelist()  # python -m tomori_cog


@ONE_WHEEL
def test_the_wheel_ships_every_package_of_the_code_and_each_languages_words(wheel: Path) -> None:
    """setuptools ships only the packages pyproject.toml lists: one left out imports in a
    checkout and fails in a bot author's install."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("tomori", "tomori_cog"):
        for package in (REPO / folder).rglob("__init__.py"):
            assert str(package.relative_to(REPO)) in names
    for locale in LOCALES:
        assert f"tomori/words/{locale}.toml" in names


@ONE_WHEEL
def test_a_bot_authors_mypy_accepts_the_readmes_imports_and_snippets(
    wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    scripts = bot_author_scripts(tmp_path)
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-executable",
            sys.executable,
            *map(str, scripts),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        timeout=300,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_readmes_editable_install_is_seen_by_a_bot_authors_mypy(tmp_path: Path) -> None:
    """The README's `pip install -e` of a clone into a bot's own environment: the bot author's
    mypy finds `tomori_cog` and its types (setuptools' default editable mode hides them)."""
    (section,) = [s for s in sections(README.read_text()) if s.title == "Adding it to your own bot"]
    (command,) = [line for line in section.body.splitlines() if line.startswith("pip install -e")]
    clone = tmp_path / "tomori-cog"
    shutil.copytree(REPO, clone, ignore=shutil.ignore_patterns(*NOT_IN_A_CLONE))
    venv = tmp_path / "bot-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    arguments = command.removeprefix("pip install").replace("./tomori-cog", str(clone)).split()
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if installed.returncode != 0:
        pytest.skip(f"pip could not install the clone here: {installed.stderr[-500:]}")
    (tmp_path / "bot.py").write_text(
        "from tomori_cog import Settings\n\nlimit: int = Settings(history_limit=10).history_limit\n"
    )
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-executable",
            python,
            "bot.py",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@ONE_WHEEL
def test_only_the_extras_bring_a_discord_library_and_the_gemini_sdk(wheel: Path) -> None:
    """A bot brings its own Discord library, and one that names no gemini: model does not carry
    google-genai: an install of the `discordpy` extra brings no nextcord."""
    archive = zipfile.ZipFile(wheel)
    (metadata,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
    requires = [
        line.removeprefix("Requires-Dist: ")
        for line in archive.read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist: ")
    ]
    by_extra: dict[str, set[str]] = {}
    for requirement in map(Requirement, requires):
        marker = str(requirement.marker or "")
        extra = marker.split("extra ==", 1)[1].strip(" \"'") if "extra ==" in marker else ""
        by_extra.setdefault(extra, set()).add(canonicalize_name(requirement.name))
    assert {"nextcord", "discord-py", "google-genai"}.isdisjoint(by_extra[""])
    assert "openai" in by_extra[""]
    assert by_extra["nextcord"] == {"nextcord"}
    assert by_extra["discordpy"] == {"discord-py"}
    assert "google-genai" in by_extra["gemini"]
    assert by_extra["metrics"] == {"prometheus-client"}


def without(hidden: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command with `args` and `env`, as an install without the module `hidden` runs it."""
    return subprocess.run(
        [*command_without(hidden), *args],
        capture_output=True,
        text=True,
        env=environment(**env),
        timeout=60,
        check=False,
    )


def nowhere() -> str:
    """An address nothing listens at: a model there fails at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


@pytest.mark.parametrize("mode", [(), ("--check",), ("--console",)])
def test_a_gemini_model_without_the_gemini_extra_stops_start_up_naming_the_extra(
    mode: tuple[str, ...], tmp_path: Path
) -> None:
    ran = without(
        "google.genai",
        *mode,
        DISCORD_TOKEN="x",
        TOMORI_DB_PATH=str(tmp_path / "t.db"),
        TOMORI_MODELS="openai:m,gemini:g",
        OPENAI_API_KEY="k",
        OPENAI_BASE_URL=nowhere(),
        GEMINI_API_KEY="k",
    )
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stderr == (
        "error: TOMORI_MODELS entry 'gemini:g' needs the gemini extra, which is not installed "
        "(its SDK, google.genai, is missing): pip install 'tomori-cog[gemini]' (from a clone: "
        "pip install -e '.[gemini]')\n"
    )


def test_postgresql_without_the_postgres_extra_stops_start_up_naming_the_extra(
    tmp_path: Path,
) -> None:
    ran = without(
        "asyncpg",
        "--check",
        TOMORI_MODELS="openai:m",
        OPENAI_API_KEY="k",
        OPENAI_BASE_URL=nowhere(),
        TOMORI_DB_URL="postgresql://tomori@127.0.0.1/tomori",
    )
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stdout.splitlines()[-1] == (
        "FAILED  database: TOMORI_DB_URL needs the postgres extra, which is not installed (its "
        "driver, asyncpg, is missing): pip install 'tomori-cog[postgres]' (from a clone: pip "
        "install -e '.[postgres]')"
    )


@pytest.mark.parametrize("mode", [(), ("--check",), ("--console",)])
def test_metrics_without_the_metrics_extra_stop_start_up_naming_the_extra(
    mode: tuple[str, ...], tmp_path: Path
) -> None:
    ran = without(
        "prometheus_client",
        *mode,
        DISCORD_TOKEN="x",
        TOMORI_DB_PATH=str(tmp_path / "t.db"),
        TOMORI_MODELS="openai:m",
        OPENAI_API_KEY="k",
        OPENAI_BASE_URL=nowhere(),
        TOMORI_METRICS_ADDR="127.0.0.1:9108",
    )
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stderr == (
        "error: TOMORI_METRICS_ADDR='127.0.0.1:9108' is not allowed: it needs the metrics "
        "extra, which is not installed (its client, prometheus_client, is missing): pip install "
        "'tomori-cog[metrics]' (from a clone: pip install -e '.[metrics]')\n"
    )


IMPORTING_ALL = """
import importlib, pkgutil, sys
import tomori, tomori_cog

for package in (tomori, tomori_cog):
    for found in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if found.name != "tomori.monitoring.prometheus":  # the extra's own module
            importlib.import_module(found.name)
print("imported")
"""


def test_every_module_but_the_exporters_own_imports_without_the_metrics_extra() -> None:
    """prometheus_client stays optional: the core and the cog import without it."""
    hider = HIDING.replace(RUN_COMMAND, "exec(sys.argv[0])")
    ran = subprocess.run(
        [sys.executable, "-c", hider, "prometheus_client", IMPORTING_ALL],
        capture_output=True,
        text=True,
        env=environment(),
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "imported\n"


def test_the_command_without_either_discord_library_says_which_extra_brings_one(
    tmp_path: Path,
) -> None:
    env = {
        "TOMORI_MODELS": "openai:m",
        "OPENAI_API_KEY": "k",
        "OPENAI_BASE_URL": nowhere(),
        "DISCORD_TOKEN": "x",
        "TOMORI_DB_PATH": str(tmp_path / "t.db"),
    }
    ran = without("nextcord,discord", **env)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stderr == (
        "error: the bot runs on nextcord or discord.py, and neither is installed: pip install "
        "'tomori-cog[nextcord]' (from a clone: pip install -e '.[nextcord]')\n"
    )
    checked = without("nextcord,discord", "--check", **env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1] == (
        "FAILED  discord: the login is checked with the bot's Discord library, and neither "
        "nextcord nor discord.py is installed: pip install 'tomori-cog[nextcord]' (from a "
        "clone: pip install -e '.[nextcord]')"
    )


def test_the_architecture_page_names_every_package_and_nothing_else() -> None:
    """docs/architecture.md's tree holds every package of both code folders and every module
    at their top, and names nothing the code does not have."""
    tree = (REPO / "docs" / "architecture.md").read_text().split("## The tree", 1)[1]
    tree = tree.split("```")[1]
    named: dict[str, set[str]] = {"tomori": set(), "tomori_cog": set()}
    folder = ""
    for line in tree.splitlines():
        entry = line.split()[0] if line.strip() else ""
        if not line.startswith(" ") and entry:
            folder = entry.rstrip("/")
        elif line.startswith("  ") and not line.startswith("   ") and folder in named:
            named[folder].add(entry)
    for folder, entries in named.items():
        root = REPO / folder
        present = {p.name + "/" for p in root.iterdir() if (p / "__init__.py").exists()}
        present |= {p.name for p in root.glob("*.py") if p.name != "__init__.py"}
        assert entries == present, folder


DESIGN_DOCUMENTS = ("BEHAVIOR.md", "ARCHITECTURE.md", "FACTS.md", "TOMORIBOT_REFERENCE.md")


def test_the_repositorys_docs_point_only_at_files_in_it() -> None:
    files = [REPO / "README.md", REPO / "bot.py", REPO / "pyproject.toml"]
    files += [*(REPO / "docs").glob("*.md"), REPO / "bench" / "README.md"]
    for folder in ("tomori", "tomori_cog", "cogs", "tests", "bench"):
        files += (REPO / folder).rglob("*.py")
    for path in files:
        text = path.read_text()
        for document in DESIGN_DOCUMENTS:
            if document in text and not (REPO / document).exists():
                assert path.name == "test_packaging.py", f"{path} cites {document}"
