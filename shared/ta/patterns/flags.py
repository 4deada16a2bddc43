"""Flags: a steep pole and a brief, tight, flat or counter-sloped flag after it."""

from __future__ import annotations

import math

import numpy as np

from shared.ta.patterns.geometry import Bounds, Finding, View, best, finding, line_through, ramp

FLAG_MIN_BARS = 4
"""A flag needs at least 4 bars to show a channel rather than a pause."""

FLAG_MAX_SHARE = 0.4
"""A flag is brief next to the chart: at most 40% of the window."""

POLE_MAX_SHARE = 0.25
"""The pole is a burst: at most a quarter of the window."""

POLE_SIZE: Bounds = (4.0, 7.0)
"""Pole height in median bar ranges (median, because the pole's own bars are large)."""

POLE_SIGNIFICANCE: Bounds = (2.5, 4.0)
"""Pole height over (median bar range x sqrt(pole bars)): a random walk's largest burst
scores about 2, a pole stands well above it. The square root keeps it resolution-free, and
the pole starts where this is largest, so flat bars before the burst are not counted in."""

FLAG_RETRACE: Bounds = (0.65, 0.4)
"""Deepest pullback of the flag as a share of the pole: flags give back less than half."""

FLAG_OVERSHOOT: Bounds = (0.2, 0.05)
"""How far the flag exceeds the pole's end, per pole: beyond that the pole is still going."""

FLAG_TIGHTNESS: Bounds = (0.15, 0.07)
"""RMS of flag closes around their trend, per pole: the flag is a narrow channel."""

FLAG_WITH_POLE: Bounds = (0.15, 0.03)
"""Flag drift in the pole's direction, per pole: flags are flat or lean against the pole."""

FLAG_AGAINST_POLE: Bounds = (-0.8, -0.5)
"""Flag drift against the pole, per pole (negative): more than that is a reversal."""


def _flag_after(view: View, pole_end: int) -> Finding | None:
    """A steep pole ending at bar ``pole_end`` and a tight, flat or counter-sloped flag after."""
    bars, side = view.bars, view.side
    unit = float(np.median(bars.ranges))
    first = max(0, pole_end - math.ceil(POLE_MAX_SHARE * bars.n))
    rises = view.high[pole_end] - view.low[first:pole_end]
    significance = rises / np.sqrt(np.arange(pole_end - first, 0, -1))
    pole_start = first + int(significance.argmax())
    pole = view.high[pole_end] - view.low[pole_start]
    if pole <= 0 or unit <= 0 or view.high[pole_start:pole_end].max() > view.high[pole_end]:
        return None  # no rise, or the pole's top came earlier and this bar is in the flag
    flag = slice(pole_end + 1, bars.n)
    length = bars.n - 1 - pole_end
    trend = line_through(view.close[flag])
    drift = trend.coef[1] * (length - 1) / pole
    retrace = (view.high[pole_end] - view.low[flag].min()) / pole
    scores = (
        ramp(pole / unit, POLE_SIZE),
        ramp(significance.max() / unit, POLE_SIGNIFICANCE),
        ramp(retrace, FLAG_RETRACE),
        ramp((view.high[flag].max() - view.high[pole_end]) / pole, FLAG_OVERSHOOT),
        ramp(trend.rms / pole, FLAG_TIGHTNESS),
        ramp(drift, FLAG_WITH_POLE),
        ramp(drift, FLAG_AGAINST_POLE),
    )
    return finding(
        side.bias,
        scores,
        pole_start,
        bars.n - 1,
        lambda: (
            f"A {bars.pct(pole)} {side.rally} over {pole_end - pole_start} bars (bars "
            f"{pole_start}-{pole_end}, {pole / unit:.1f}x the median bar range) is followed by "
            f"a flag of {length} bars that gives back at most {retrace:.0%} of it, drifts "
            f"{abs(drift):.0%} of the pole {'against' if drift < 0 else 'with'} it and keeps "
            f"its closes within {trend.rms / pole:.0%} of the pole around that drift."
        ),
    )


def flag(view: View) -> Finding | None:
    """The best pole/flag split with a flag of allowed length ending at the last bar."""
    n = view.bars.n
    longest = math.floor(FLAG_MAX_SHARE * n)
    return best(_flag_after(view, n - 1 - length) for length in range(FLAG_MIN_BARS, longest + 1))
