"""The island reversal: bars cut off by a gap from the bars on each side of them."""

from __future__ import annotations

import math

from shared.ta.patterns.geometry import Bounds, Finding, View, best, finding, ramp

ISLAND_MAX_SHARE = 0.25
"""An island is a short cluster: at most a quarter of the window between the two gaps."""

ISLAND_GAP_ATR: Bounds = (0.0, 0.3)
"""The smaller gap in ATRs: any true gap counts, a third of a bar range is a clear one."""


def island(view: View) -> Finding | None:
    """Bars cut off by a gap from the bar on each side of them: the best such island."""
    bars, high, low = view.bars, view.high, view.low
    longest = max(1, math.floor(ISLAND_MAX_SHARE * bars.n))
    candidates: list[Finding | None] = []
    for first in range(1, bars.n - 1):
        for after in range(first + 1, min(bars.n, first + longest + 1)):
            ceiling = high[first:after].max()
            left_gap, right_gap = low[first - 1] - ceiling, low[after] - ceiling
            if left_gap <= 0:
                break
            if right_gap > 0:
                candidates.append(_island_finding(view, first, after, left_gap, right_gap))
    return best(candidates)


def _island_finding(
    view: View, first: int, after: int, left_gap: float, right_gap: float
) -> Finding | None:
    """Score and describe the island of bars ``first``..``after - 1``."""
    bars, side = view.bars, view.side
    return finding(
        side.bias,
        (ramp(min(left_gap, right_gap) / bars.atr, ISLAND_GAP_ATR),),
        first - 1,
        after,
        lambda: (
            f"A {bars.pct(left_gap)} {side.gap_down} into bar {first} and a "
            f"{bars.pct(right_gap)} {side.gap_up} at bar {after} leave bars {first}-{after - 1} "
            f"isolated {side.below} the bars on either side."
        ),
    )
