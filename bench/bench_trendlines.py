"""How much faster the closed-form trendlines are than the iterative search.

Run from anywhere: ``.venv/bin/python bench/bench_trendlines.py [--windows N] [--bars N]``.
Times both implementations on the same windows of real OHLCV bars (the real
OHLCV files bundled in ``shared/market/data``) and prints the time per fit and the
speed ratio, for the single-series and the high/low fit.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

# Run as a script, so the repository root is not on the path by default.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import reference_trendlines as reference  # noqa: E402
from shared.market.sources import DATA_DIR  # noqa: E402
from shared.ta import trendlines  # noqa: E402

DATASETS = ("GOOG", "EURUSD", "BTCUSD")
REPEATS = 5
"""Each timing is the best of this many passes, to shed scheduler noise."""

Bars = tuple[np.ndarray, np.ndarray, np.ndarray]


def load_windows(name: str, count: int, length: int) -> list[Bars]:
    """``count`` evenly spaced windows of ``length`` bars as (high, low, close) arrays."""
    bars = pd.read_csv(DATA_DIR / f"{name}.csv", index_col=0)
    starts = np.linspace(0, len(bars) - length, count).astype(int)
    return [
        tuple(
            bars[column].to_numpy()[start : start + length] for column in ("High", "Low", "Close")
        )
        for start in starts
    ]


def seconds_per_fit(fit: Callable[[Bars], object], windows: list[Bars]) -> float:
    """Best-of-``REPEATS`` mean wall time of ``fit`` over ``windows``."""
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for window in windows:
            fit(window)
        best = min(best, time.perf_counter() - start)
    return best / len(windows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=200, help="windows per dataset")
    parser.add_argument("--bars", type=int, default=50, help="bars per window")
    args = parser.parse_args()

    fits: dict[str, tuple[Callable[[Bars], object], Callable[[Bars], object]]] = {
        "single": (
            lambda w: reference.fit_trendlines_single(w[2]),
            lambda w: trendlines.fit_trendlines_single(w[2]),
        ),
        "high_low": (
            lambda w: reference.fit_trendlines_high_low(*w),
            lambda w: trendlines.fit_trendlines_high_low(*w),
        ),
    }
    print(f"{args.windows} windows of {args.bars} bars per dataset, best of {REPEATS} passes")
    print(f"{'dataset':<8} {'fit':<9} {'reference µs':>13} {'closed form µs':>15} {'speed-up':>9}")
    for name in DATASETS:
        windows = load_windows(name, args.windows, args.bars)
        for label, (reference_fit, our_fit) in fits.items():
            theirs = seconds_per_fit(reference_fit, windows)
            ours = seconds_per_fit(our_fit, windows)
            print(
                f"{name:<8} {label:<9} {theirs * 1e6:>13.1f} {ours * 1e6:>15.1f}"
                f" {theirs / ours:>8.1f}x"
            )


if __name__ == "__main__":
    main()
