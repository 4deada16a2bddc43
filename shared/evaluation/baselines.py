"""The rules an agent has to beat, computed on the same windows and the same visible bars.

Each baseline reads only what the agent reads (the visible bars), so a baseline
can never look ahead either. The random one is seeded per window, not per run,
so a window's coin flip does not depend on which other windows are evaluated or
in which order they finish.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from shared.agents.quantagent import Direction
from shared.market.bars import Bar

SLOPE_BARS = 40
"""The linear-regression baseline fits the last 40 visible closes, as in the QuantAgent paper."""

Baseline = Callable[[Sequence[Bar], str, int], Direction]
"""(visible bars, window id, seed) -> the baseline's call."""


def random_call(bars: Sequence[Bar], window_id: str, seed: int) -> Direction:
    """A fair coin, seeded by ``seed`` and the window: reproducible, independent of order."""
    coin = random.Random(f"{seed}:{window_id}")
    return Direction.LONG if coin.random() < 0.5 else Direction.SHORT


def least_squares_slope(values: Sequence[float]) -> float:
    """The slope of the least-squares line through ``values`` at x = 0, 1, 2, ..."""
    n = len(values)
    if n < 2:
        return 0.0
    mean_x = (n - 1) / 2
    mean_y = sum(values) / n
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values))
    variance = sum((x - mean_x) ** 2 for x in range(n))
    return covariance / variance


def slope_call(bars: Sequence[Bar], window_id: str, seed: int) -> Direction:
    """LONG when the last ``SLOPE_BARS`` closes trend up; a flat fit says SHORT, like a flat close."""
    closes = [bar.close for bar in bars[-SLOPE_BARS:]]
    return Direction.LONG if least_squares_slope(closes) > 0 else Direction.SHORT


def always_long(bars: Sequence[Bar], window_id: str, seed: int) -> Direction:
    """The drift baseline: its accuracy is the share of windows that rose."""
    return Direction.LONG


BASELINES: dict[str, Baseline] = {
    "random": random_call,
    "linreg_slope": slope_call,
    "always_long": always_long,
}
"""Every baseline by its column name, in table order."""

BASELINE_TITLES = {
    "random": "random",
    "linreg_slope": "linreg slope",
    "always_long": "always long",
}
"""Column headings for people."""
