"""The Temporal floor bench, small: every chain's steps run, at the rate limit, and its
table says what each process spent per step and how late the activities began."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parent.parent


def test_the_floor_bench_runs_every_step_at_the_rate_limit_and_prints_its_table() -> None:
    # 3 chains × 4 steps at 4 requests/s: the limit, not the 0.4 s of calls, sets the bound
    # (the server lets a first burst through, so a run this small may beat it). Each chain's
    # steps run in two child runs, in turn.
    bench = subprocess.run(
        [sys.executable, "bench/bench_temporal_floor.py", "--chains", "3", "--steps", "4"]
        + ["--rps", "4", "--latency", "0.1", "--children", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    out = bench.stdout
    assert bench.returncode == 0, out + bench.stderr[-3000:]
    assert "3 chains × 4 steps of 0.1 s, 4 requests/s, each chain's steps in 2 child runs" in out
    wall = re.search(r"wall time\s+([\d.]+) s", out)
    assert wall is not None and float(wall.group(1)) >= 4 * 0.1, out  # each chain in sequence
    assert re.search(r"bound\s+3\.00 s; wall/bound [\d.]+", out), out
    assert re.search(r"CPU per step\s+.*dev server [\d.]+.*workers [\d.]+ ms", out), out
    assert re.search(r"start lag\s+mean \d+ ms, median \d+, 95th \d+, max \d+", out), out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--chains", "0"], "--chains and --steps must be at least 1"),
        (["--steps", "2", "--children", "3"], "--children must be from 0 (none) to --steps"),
    ],
)
def test_the_floor_bench_refuses_a_load_it_cannot_run(arguments: list[str], message: str) -> None:
    bench = subprocess.run(
        [sys.executable, "bench/bench_temporal_floor.py", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert bench.returncode == 2 and message in bench.stderr
