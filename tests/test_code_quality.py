"""The house rules that a linter can check: ruff on the tree, mypy on ``shared/``, layer imports."""

from __future__ import annotations

import re
import subprocess
import sys
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
def test_mypy_passes_on_shared() -> None:
    result = _run(str(BIN / "mypy"))
    assert result.returncode == 0, result.stdout


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
