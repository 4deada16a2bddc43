"""The hidden base: a long, narrow, calm range near the lows after a decline."""

from __future__ import annotations

import math

from shared.ta.patterns.geometry import Bars, Bounds, Finding, best, finding, line_through, ramp
from shared.ta.patterns.model import Bias

BASE_MIN_SHARE = 0.3
"""A base must fill at least 30% of the window: "long" consolidation, not a pause."""

BASE_DECLINE_MIN_BARS = 3
"""Bars before the base: a decline, and a "before" to compare bar ranges with, needs a few."""

BASE_LENGTH: Bounds = (0.25, 0.4)
"""Base length per window, scored: longer bases are more convincing."""

BASE_TIGHTNESS: Bounds = (0.4, 0.2)
"""Base high-low range over the decline before it: the base is narrow relative to the fall."""

BASE_CALM: Bounds = (0.9, 0.6)
"""Mean bar range in the base over that before it: volatility has dried up."""

BASE_NEAR_LOWS: Bounds = (0.4, 0.25)
"""Middle of the base within the window's high-low range: it sits near the lows."""

BASE_DRIFT: Bounds = (0.8, 0.4)
"""Trend of closes across the base per base range: the base is flat, not a channel."""

BASE_DECLINE_ATR: Bounds = (4.0, 8.0)
"""Decline before the base in ATRs: a base follows a real fall."""


def _hidden_base_from(bars: Bars, start: int) -> Finding | None:
    """A long, narrow, calm, flat range from bar ``start`` to the end, after a decline."""
    base_high, base_low = bars.high[start:].max(), bars.low[start:].min()
    peak_index = int(bars.high[:start].argmax())
    decline = bars.high[peak_index] - base_low
    base_range = base_high - base_low
    if decline <= 0 or base_range <= 0:
        return None
    window_low, window_high = bars.low.min(), bars.high.max()
    middle = ((base_high + base_low) / 2 - window_low) / (window_high - window_low)
    calm = bars.ranges[start:].mean() / bars.ranges[:start].mean()
    drift = line_through(bars.close[start:]).coef[1] * (bars.n - 1 - start)
    length = bars.n - start
    scores = (
        ramp(length / bars.n, BASE_LENGTH),
        ramp(base_range / decline, BASE_TIGHTNESS),
        ramp(calm, BASE_CALM),
        ramp(middle, BASE_NEAR_LOWS),
        ramp(abs(drift) / base_range, BASE_DRIFT),
        ramp(decline / bars.atr, BASE_DECLINE_ATR),
    )
    return finding(
        Bias.BULLISH,
        scores,
        start,
        bars.n - 1,
        lambda: (
            f"After a {bars.pct(decline)} decline from the bar-{peak_index} high, bars "
            f"{start}-{bars.n - 1} ({length} bars) held a {bars.pct(base_range)} range "
            f"({base_range / decline:.0%} of the decline) centred {middle:.0%} of the way up "
            f"the window's range, with bar ranges {1 - calm:.0%} narrower than before."
        ),
    )


def hidden_base(bars: Bars) -> Finding | None:
    """The best base over all start bars leaving a long enough base; longer wins ties."""
    latest = bars.n - math.ceil(BASE_MIN_SHARE * bars.n)
    starts = range(BASE_DECLINE_MIN_BARS, latest + 1)
    return best(_hidden_base_from(bars, start) for start in starts)
