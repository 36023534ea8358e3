"""The documentation site's configuration parses, and its navigation names pages that exist."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _pages(item)]
    if isinstance(nav, dict):
        assert len(nav) == 1, f"a navigation entry is one title and its page(s), got {nav!r}"
        return [p for value in nav.values() for p in _pages(value)]
    raise AssertionError(f"unexpected navigation entry {nav!r}")


def test_mkdocs_config_parses_and_its_nav_names_existing_pages():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = _pages(config["nav"])
    assert pages, "the navigation lists no page"
    missing = [
        p for p in pages if not p.startswith("http") and not (ROOT / "docs" / p).exists() and not (ROOT / p).exists()
    ]
    assert missing == []


def test_the_check_sees_an_unquoted_colon_in_a_title(tmp_path):
    yaml = pytest.importorskip("yaml")
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load("nav:\n  - A: b: c.md\n")
