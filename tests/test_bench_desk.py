"""The desk bench, quick: three names at 0.1 s per call, run as a user runs it, prints every
line of its table, with every name decided and a history for each workflow type."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
BENCH_TIMEOUT = 600
"""Seconds: the run takes about 30 s alone, minutes on a loaded machine."""
LINES = (
    "desk ",
    "wall time ",
    "bound ",
    "critical path ",
    "LLM calls ",
    "calls per second ",
    "calls span ",
    "history AutoRun ",
    "history Pipeline ",
    "history Debate ",
    "history Risk ",
    "history Portfolio ",
    "peak memory ",
    "CPU ",
    "S3 objects written ",
    "decisions ",
    "progress query ",
    "GC pauses ",
)


def test_the_quick_desk_bench_prints_every_line_of_its_table() -> None:
    bench = subprocess.run(
        [sys.executable, "bench/bench_desk.py", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BENCH_TIMEOUT,
    )

    out = bench.stdout
    assert bench.returncode == 0, out + bench.stderr[-3000:]
    starts = [line.split("  ")[0].strip() + " " for line in out.splitlines()]
    missing = [label for label in LINES if not any(s.startswith(label) for s in starts)]
    assert missing == [], out
    assert "3 names, 5 requests/s, 0.1 s per call" in out
    assert "3 decided, 0 failed of 3" in out
    assert re.search(r"history Pipeline\s+3 runs", out), out
    written = re.search(r"S3 objects written\s+(\d+)", out)
    assert written is not None and int(written.group(1)) > 0, out
    assert re.search(r"progress query\s+[\d.]+ ms for \d+ steps", out), out
