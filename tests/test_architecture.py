"""The house as the imports have it: doors over one client over the runtime over ``shared``.

Every import in the product's packages is read from the source (module level and inside
functions alike) and checked against the layers ``docs/architecture.md`` draws: a package
imports only its own layer and the layers below, and no door imports another door. The
page's table of who imports whom is compared with the imports themselves, so the picture
cannot drift from the code. No module grows past ``MAX_LINES``.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS: dict[str, int] = {
    "cli": 0,
    "console": 0,
    "mcp_server": 0,
    "client": 1,
    "workflows": 2,
    "activities": 2,
    "workers": 2,
    "shared": 3,
}
"""Package → its layer, top (the doors) first. A layer imports only itself and those below."""
DOORS = frozenset(package for package, layer in LAYERS.items() if layer == 0)
MAX_LINES = 600
"""The most lines a module may have: past it, a module holds more than one idea."""
PICTURE = ROOT / "docs" / "architecture.md"
PICTURE_ROW = re.compile(r"^\| `(\w+)/` \| (\d) \|([^|]*)\|", re.M)
"""A row of the page's layer table: package, layer, the packages it imports."""


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imported_packages(path: Path) -> set[str]:
    """The top-level names ``path`` imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.partition(".")[0])
    return found


def _imports() -> dict[str, dict[str, list[str]]]:
    """Package → each of our packages it imports → the modules that do."""
    edges: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for package in LAYERS:
        for path in _modules(package):
            for imported in _imported_packages(path) & LAYERS.keys():
                if imported != package:
                    edges[package][imported].append(str(path.relative_to(ROOT)))
    return edges


def _against_the_layers(importer: str, imported: str) -> bool:
    if importer in DOORS and imported in DOORS:
        return True
    return LAYERS[imported] < LAYERS[importer]


def test_every_import_runs_down_the_layers_and_no_door_imports_another() -> None:
    wrong = {
        f"{importer} → {imported}": modules
        for importer, imports in _imports().items()
        for imported, modules in imports.items()
        if _against_the_layers(importer, imported)
    }
    assert wrong == {}


def test_the_picture_in_the_docs_is_the_imports() -> None:
    """``docs/architecture.md`` lists each package's layer and the packages it imports."""
    drawn = {
        package: (int(layer), {name.strip(" `/") for name in imports.split(",") if name.strip()})
        for package, layer, imports in PICTURE_ROW.findall(PICTURE.read_text())
    }
    actual = {package: (LAYERS[package], set(_imports().get(package, {}))) for package in LAYERS}
    assert drawn == actual


@pytest.mark.parametrize(
    ("importer", "imported", "wrong"),
    [
        ("mcp_server", "console", True),
        ("cli", "mcp_server", True),
        ("client", "cli", True),
        ("shared", "workers", True),
        ("activities", "client", True),
        ("console", "client", False),
        ("client", "workers", False),
        ("workflows", "activities", False),
    ],
)
def test_the_rule_itself(importer: str, imported: str, wrong: bool) -> None:
    """The check is one that can fail: a door over a door, or a layer reaching up, is caught."""
    assert _against_the_layers(importer, imported) is wrong


def test_no_module_is_longer_than_the_limit() -> None:
    """Every Python file of the repository: the packages, the benches and the tests."""
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(ROOT.rglob("*.py"))
        if not {".venv", "build", "site"} & set(path.relative_to(ROOT).parts)
        and (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
