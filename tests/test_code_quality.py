"""The house rules that a linter can check: ruff on the tree, mypy on every package (and the
test fixtures), layer imports."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HEAVY_IN_WORKFLOWS = re.compile(
    r"^(import|from)\s+(pandas|numpy|talib|matplotlib|mplfinance|minio|openai|anthropic)\b", re.M
)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    result = _run(str(BIN / "ruff"), "check", ".")
    assert result.returncode == 0, result.stdout


@pytest.mark.slow
def test_mypy_passes_on_every_package() -> None:
    result = _run(str(BIN / "mypy"))
    assert result.returncode == 0, result.stdout


def test_mypy_is_configured_for_every_package() -> None:
    checked = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"])
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert packages - checked == set()


def test_shared_never_imports_temporalio() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "shared").rglob("*.py")
        if re.search(r"^\s*(import|from)\s+temporalio", path.read_text(), re.M)
    ]
    assert offenders == []


def test_workflows_import_no_heavy_library_at_module_level() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "workflows").rglob("*.py")
        if HEAVY_IN_WORKFLOWS.search(path.read_text())
    ]
    assert offenders == []


BY_NAME_ALLOWED = {("llm_calls.py", "chat")}
"""``chat`` runs on its provider's queue; its module imports the vendor SDKs, which the
workflow worker does not load."""


def test_workflows_call_activities_and_children_by_reference() -> None:
    calls = {
        "execute_activity",
        "execute_activity_method",
        "start_activity",
        "execute_child_workflow",
        "start_child_workflow",
    }
    offenders = []
    for path in sorted((ROOT / "workflows").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in calls
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and (path.name, node.args[0].value) not in BY_NAME_ALLOWED
            ):
                offenders.append(f"{path.name}:{node.lineno} {node.args[0].value}")
    assert offenders == []
