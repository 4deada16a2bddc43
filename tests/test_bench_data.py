"""The data bench, quick (ten names), run as a user runs it: the SEC's quota held in every
second, and a second run of the same dates answered by the cache alone."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.cli_process import ROOT


def test_the_quick_data_bench_keeps_the_quota_and_hits_the_cache() -> None:
    bench = subprocess.run(
        [sys.executable, "bench/bench_data.py", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert bench.returncode == 0, bench.stderr
    out = bench.stdout
    assert "tool calls by vendor {'sec': 5, 'fred': 3}" in out
    seen = re.search(r"most SEC requests in any 1 s: (\d+) \(quota 8, the SEC allows 10\)", out)
    assert seen is not None and 0 < int(seen.group(1)) <= 8, out
    assert "vendor requests 0, cache hit rate 100.0%" in out
