"""The repository's pages as a reader finds them: the generated reference up to date."""

from __future__ import annotations

from pathlib import Path

from tomori_cog.variables import configuration_page

REPO = Path(__file__).resolve().parents[1]
REGENERATE = "python -m tomori_cog.variables > docs/configuration.md"


def test_the_configuration_page_is_the_one_the_declarations_give() -> None:
    committed = (REPO / "docs" / "configuration.md").read_text()
    assert committed == configuration_page(), (
        f"docs/configuration.md differs from the settings' declarations: run `{REGENERATE}`"
    )
