"""The repository's pages as a reader finds them: a short README, links that lead somewhere,
and the generated reference up to date."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.support.markdown import anchors, links
from tomori_cog.variables import configuration_page

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted([REPO / "README.md", REPO / "bench" / "README.md", *(REPO / "docs").glob("*.md")])
README_LINES = 200
"""What a newcomer reads first: what it is, the quick start, adding it to a bot, the links.
Anything longer belongs in docs/."""
REGENERATE = "python -m tomori_cog.variables > docs/configuration.md"


def test_the_readme_stays_short() -> None:
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= README_LINES, f"README.md has {lines} lines: move the details into docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    for target in links(page.read_text()):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue  # the web: not this repository's to check
        path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        assert path.is_relative_to(REPO), f"{page.name}: {target} leaves the repository"
        assert path.exists(), f"{page.name}: {target} names no file"
        if parts.fragment:
            assert path.suffix == ".md", f"{page.name}: {target} has an anchor into a non-page"
            found = anchors(path.read_text())
            assert parts.fragment in found, f"{page.name}: {target} names no heading there"


def test_the_readme_links_every_page_of_docs() -> None:
    """Every page of docs/ is reachable from the README."""
    linked = {
        (REPO / urlsplit(target).path).resolve()
        for target in links((REPO / "README.md").read_text())
    }
    for page in (REPO / "docs").glob("*.md"):
        assert page.resolve() in linked, f"the README does not link {page.name}"


def test_the_configuration_page_is_the_one_the_declarations_give() -> None:
    committed = (REPO / "docs" / "configuration.md").read_text()
    assert committed == configuration_page(), (
        f"docs/configuration.md differs from the settings' declarations: run `{REGENERATE}`"
    )


def test_every_test_the_fault_table_names_exists() -> None:
    """docs/faults.md names a test for each fault: each of them is a test of the suite."""
    table = (REPO / "docs" / "faults.md").read_text()
    named = set(re.findall(r"`(test_\w+)`", table))
    defined: set[str] = set()
    for path in (REPO / "tests").rglob("test_*.py"):
        defined |= set(re.findall(r"^(?:async )?def (test_\w+)", path.read_text(), re.MULTILINE))
    assert named
    assert named <= defined, sorted(named - defined)
