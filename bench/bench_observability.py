"""What measuring costs: a Pipeline's wall time with the workers' metrics off, on, and with
tracing, interleaved so the machine's drift falls on every mode alike.

Each turn runs ``bench/bench_pipeline.py --observe MODE`` in a process of its own (a fresh
interpreter: an installed tracer provider cannot leak into the next mode), the modes in
turn, ``--turns`` times. It prints each mode's wall/critical ratios, their median, and the
median's difference from ``off``, against the spread of ``off`` itself: the noise the
difference must stay within.

    .venv/bin/python bench/bench_observability.py [--turns 3] [--runs 3] [--latency 0.4]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = ("off", "metrics", "tracing")
_RATIOS = re.compile(r"^wall/critical\s+([\d. ]+?)\s+\(", re.M)


def _ratios(mode: str, runs: int, latency: float) -> list[float]:
    """The wall/critical ratios of one bench_pipeline process observing as ``mode``."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "bench_pipeline.py"),
            "--observe",
            mode,
            "--runs",
            str(runs),
            "--latency",
            str(latency),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    found = _RATIOS.search(done.stdout)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"bench_pipeline --observe {mode} failed:\n{done.stdout}\n{done.stderr}")
    return [float(value) for value in found.group(1).split()]


def main(turns: int, runs: int, latency: float) -> None:
    seen: dict[str, list[float]] = {mode: [] for mode in MODES}
    for turn in range(turns):
        for mode in MODES:
            seen[mode] += _ratios(mode, runs, latency)
            print(f"turn {turn + 1}/{turns} {mode:8} {seen[mode][-runs:]}", flush=True)
    base = statistics.median(seen["off"])
    noise = max(seen["off"]) - min(seen["off"])
    print(f"\nPipeline at {latency:.2f} s a call, {turns} turns x {runs} runs per mode")
    print(f"{'mode':8} {'median':>7} {'vs off':>8}   ratios (wall / critical path)")
    for mode in MODES:
        median = statistics.median(seen[mode])
        ratios = " ".join(f"{r:.2f}" for r in sorted(seen[mode]))
        print(f"{mode:8} {median:7.3f} {median - base:+8.3f}   {ratios}")
    print(f"noise: the spread of off's own runs, {noise:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3, help="measured Pipelines per process")
    parser.add_argument("--latency", type=float, default=0.4)
    options = parser.parse_args()
    main(options.turns, options.runs, options.latency)
