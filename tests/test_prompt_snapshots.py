"""Every Pipeline agent's prompt, as ``quantdesk prompt show`` prints it, against its golden copy.

A prompt change shows up in review as a diff of ``tests/prompts/<agent>.txt``. The
prompts are rehearsed on GOOG as of 2012-06-01 over the default data routes with an
empty local folder (bundled prices, the sim vendor for the rest): real data, no
network, deterministic. After changing a prompt on purpose, refresh the copies:

    QUANTDESK_UPDATE_PROMPTS=1 pytest tests/test_prompt_snapshots.py
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from shared.agents.pipeline.rehearsal import analysis_time, rehearse, render_prompt
from shared.agents.pipeline.roles import AGENTS
from shared.config import load_settings
from shared.data.factory import build_router
from shared.tools.registry import ToolServices

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "prompts"
SYMBOL = "GOOG"
AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
UPDATE = os.environ.get("QUANTDESK_UPDATE_PROMPTS") == "1"
BUILT_IN = sorted(AGENTS)


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> ToolServices:
    folder = tmp_path_factory.mktemp("prompt-data")
    return ToolServices(router=build_router(load_settings(data_dir=folder)))


@pytest.mark.parametrize("agent", BUILT_IN)
def test_the_prompt_matches_its_golden_copy(agent: str, services: ToolServices) -> None:
    when = analysis_time(services.router, SYMBOL, AS_OF)
    shown = render_prompt(rehearse(agent, SYMBOL, when, services))
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
    assert not diff, (
        f"{agent}'s prompt changed; if on purpose, refresh with "
        f"QUANTDESK_UPDATE_PROMPTS=1 pytest {Path(__file__).name}\n{diff}"
    )


def test_every_agent_has_a_golden_prompt() -> None:
    assert sorted(path.stem for path in SNAPSHOTS.glob("*.txt")) == BUILT_IN


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "QUANTDESK_DATA_DIR": str(tmp_path),
        "QUANTDESK_TEMPORAL__ADDRESS": "127.0.0.1:9",  # nothing listens: nothing may connect
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-m", "cli.main", "prompt", "show", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_prompt_show_prints_the_golden_prompt(tmp_path: Path) -> None:
    done = _cli(tmp_path, "bull_researcher", "--symbol", SYMBOL, "--as-of", "2012-06-01")

    assert done.returncode == 0, done.stderr
    assert done.stdout == (SNAPSHOTS / "bull_researcher.txt").read_text()


def test_prompt_show_names_the_known_agents_for_an_unknown_one(tmp_path: Path) -> None:
    done = _cli(tmp_path, "bull", "--as-of", "2012-06-01")

    assert done.returncode == 1
    assert "unknown agent 'bull'" in done.stderr
    assert "bull_researcher" in done.stderr and "portfolio_manager" in done.stderr
