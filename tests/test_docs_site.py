"""The documentation site: it builds strictly (no page left out of the nav, no broken link or
anchor), its reference pages are generated from the code, and the README stays a front page
whose first commands are the quick start CI runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
QUICK_START = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[local]' && .venv/bin/quantdesk up "
    "&& .venv/bin/quantdesk run autorun",
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]' && .venv/bin/pytest",
)
README_MAX_LINES = 200


def test_the_site_builds_strictly_with_the_generated_reference(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stdout + built.stderr
    settings = (site / "reference" / "settings" / "index.html").read_text()
    assert "QUANTDESK_OPENAI__API_KEY" in settings
    assert "QUANTDESK_TEMPORAL__ADDRESS" in settings
    commands = (site / "reference" / "commands" / "index.html").read_text()
    for command in ("quantdesk up", "quantdesk run autorun", "quantdesk storage prune"):
        assert command in commands, command
    home = (site / "index.html").read_text()
    assert "Quick start" in home
    assert not (site / "hooks").exists(), "the hook module is no page of the site"


def test_no_generated_page_is_kept_in_docs() -> None:
    assert not (DOCS / "index.md").exists()
    assert not (DOCS / "reference").exists()


def _nav_pages(entries: list[object]) -> set[str]:
    pages: set[str] = set()
    for entry in entries:
        if isinstance(entry, str):
            pages.add(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                pages |= _nav_pages(value) if isinstance(value, list) else {str(value)}
    return pages


def test_every_page_in_docs_is_in_the_nav() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    nav = _nav_pages(config["nav"])
    pages = {
        path.relative_to(DOCS).as_posix()
        for path in DOCS.rglob("*.md")
        if "hooks" not in path.relative_to(DOCS).parts
    }
    assert pages - nav == set()


def test_the_readme_is_a_front_page_that_opens_with_the_quick_start() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    first_block = re.search(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)
    assert first_block is not None and first_block.group(1) == "bash"
    commands = [line for line in first_block.group(2).splitlines() if line.strip()]
    assert tuple(commands[:2]) == QUICK_START
