"""The documentation site: it builds strictly (no page left out of the nav, no broken link or
anchor), its reference pages are generated from the code, and the README stays a front page
whose first commands are the quick start CI runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
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


@pytest.mark.parametrize(
    ("page", "broken"),
    [
        ("getting-started.md", "\nSee [the old manual](manual.md).\n"),
        ("runs.md", "\nSee [stuck runs](#no-such-heading).\n"),
    ],
)
def test_a_broken_link_or_anchor_fails_the_strict_build(
    tmp_path: Path, page: str, broken: str
) -> None:
    """The same configuration over a copy of ``docs/`` with one bad link: the build refuses."""
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    (docs / page).write_text((docs / page).read_text() + broken)
    program = (
        "import logging, sys\n"
        "from mkdocs.commands.build import build\n"
        "from mkdocs.config import load_config\n"
        "from mkdocs.exceptions import Abort\n"
        f"config = load_config({str(ROOT / 'mkdocs.yml')!r}, docs_dir={str(docs)!r}, "
        f"site_dir={str(tmp_path / 'site')!r}, strict=True)\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "try:\n"
        "    build(config)\n"
        "except Abort as refused:\n"
        "    sys.exit(f'refused: {refused}')\n"
    )
    built = subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 1, built.stdout + built.stderr
    assert "refused: Aborted with 1 warnings in strict mode!" in built.stderr
    assert page in built.stderr
