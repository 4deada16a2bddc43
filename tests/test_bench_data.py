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
    # The market desk: Massive and Finnhub under their free tiers' minutes, then the cache.
    # The quick bench plays a minute in a second, so a request that reaches the stand-in more
    # than the quota's 0.2 s margin late (a loaded CI machine) can land in the next window:
    # one over is tolerated here; eight readers with no quota would put eight in one.
    massive = re.search(r"most in a vendor minute: Massive (\d+) \(allows 5\)", out)
    assert massive is not None and 0 < int(massive.group(1)) <= 6, out
    refused = re.search(r"429s: Massive (\d+), Finnhub (\d+)", out)
    assert refused is not None and int(refused.group(1)) <= 1 and refused.group(2) == "0", out
    assert "same desk again" in out and out.rstrip().endswith("vendor requests 0")
