"""The golden copies of agents' prompts in ``tests/prompts/``: compare, or refresh on purpose.

A prompt change shows up in review as a diff of ``tests/prompts/<agent>.txt``. After
changing a prompt on purpose, refresh the copies and review their diff:

    QUANTDESK_UPDATE_PROMPTS=1 pytest tests/test_prompt_snapshots.py tests/test_scan_agents.py \
        tests/test_portfolio_agents.py
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "prompts"
UPDATE = os.environ.get("QUANTDESK_UPDATE_PROMPTS") == "1"


def golden_diff(agent: str, shown: str) -> str:
    """The unified diff of ``shown`` against ``agent``'s golden copy (empty: they match),
    with how to refresh it; with ``QUANTDESK_UPDATE_PROMPTS=1`` the copy is rewritten first."""
    golden = SNAPSHOTS / f"{agent}.txt"
    if UPDATE:
        golden.write_text(shown)
    expected = golden.read_text() if golden.exists() else ""
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            shown.splitlines(keepends=True),
            fromfile=f"tests/prompts/{agent}.txt",
            tofile=f"{agent} now",
        )
    )
    if not diff:
        return ""
    return (
        f"{agent}'s prompt changed; if on purpose, refresh with QUANTDESK_UPDATE_PROMPTS=1\n{diff}"
    )


def prompt_show(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``quantdesk prompt show ARGS`` in a subprocess over ``data_dir``, with nowhere to connect."""
    env = {
        **os.environ,
        "QUANTDESK_DATA_DIR": str(data_dir),
        "QUANTDESK_TEMPORAL__ADDRESS": "127.0.0.1:9",  # nothing listens: nothing may connect
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-m", "cli.main", "prompt", "show", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
