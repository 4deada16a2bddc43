"""The four trendlines of QuantAgent's trend chart, as one reportable value.

The trend agent looks at close-based support and resistance and at support fitted
on the lows and resistance fitted on the highs. The chart draws them; this model
carries the same lines as numbers so the offline engine can reason about them and
a run's result can report them. Each line keeps its value at the window's last bar
next to the last close, because "is price above, below or between the lines now"
is the question the agent answers, and how many bars touch it, because a line
price has tested five times is a level and one it met once is a construction.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from shared.ta.pivots import true_ranges
from shared.ta.trendlines import fit_trendlines_high_low, fit_trendlines_single

__all__ = ["TOUCH_TOLERANCE_ATR", "TrendLine", "TrendLines", "summarize_trendlines"]

TOUCH_TOLERANCE_ATR = 0.2
"""A bar touches a line when its price is within a fifth of the window's average true
range of it: close enough that a chartist sees the bar sitting on the line, loose enough
that a level retested a few cents away still counts. Relative to the ATR, as the pattern
detectors' thresholds are, so a $5 and a $5000 asset count alike; on 50-bar GOOG daily
and EURUSD hourly windows a line gets about three touches (two at least: the fit pivots
on one point and usually binds on a second)."""


class TrendLine(BaseModel):
    """A straight line over a window of bars, with x the bar's index in the window."""

    model_config = ConfigDict(frozen=True)

    slope: float = Field(description="price change per bar")
    intercept: float = Field(description="the line's value at the window's first bar (x = 0)")
    last_value: float = Field(description="the line's value at the window's last bar")
    touches: int | None = Field(
        None,
        ge=1,
        description="bars whose fitted price (close, or low for support and high for "
        "resistance on highs/lows) is within TOUCH_TOLERANCE_ATR of the line; None in "
        "results recorded before touches were counted",
    )


class TrendLines(BaseModel):
    """Close-based and high/low-based support and resistance over one window."""

    model_config = ConfigDict(frozen=True)

    bars: int = Field(description="window length n; the lines use x = 0 .. n-1")
    last_close: float = Field(description="close of the window's last bar")
    close_support: TrendLine = Field(description="support fitted on the closes")
    close_resistance: TrendLine = Field(description="resistance fitted on the closes")
    high_low_support: TrendLine = Field(description="support fitted on the lows")
    high_low_resistance: TrendLine = Field(description="resistance fitted on the highs")

    def named(self) -> dict[str, TrendLine]:
        """The four lines by field name, in drawing order."""
        return {
            "close_support": self.close_support,
            "close_resistance": self.close_resistance,
            "high_low_support": self.high_low_support,
            "high_low_resistance": self.high_low_resistance,
        }


def summarize_trendlines(
    high: Sequence[float] | np.ndarray,
    low: Sequence[float] | np.ndarray,
    close: Sequence[float] | np.ndarray,
) -> TrendLines:
    """Fit all four lines on one window (``fit_trendlines_single`` and ``_high_low``),
    and count each line's touches on the series it was fitted to.

    Raises ``InvalidInput`` as those fits do (too short, unequal or non-finite series).
    """
    closes = np.asarray(close, dtype=float)
    (close_support, close_resistance) = fit_trendlines_single(closes)
    (high_low_support, high_low_resistance) = fit_trendlines_high_low(high, low, closes)
    # Validated by the fit above: equal lengths, finite.
    highs, lows = np.asarray(high, dtype=float), np.asarray(low, dtype=float)
    x = np.arange(closes.size)
    tolerance = TOUCH_TOLERANCE_ATR * float(true_ranges(highs, lows, closes).mean())

    def line(fitted: tuple[float, float], series: np.ndarray) -> TrendLine:
        slope, intercept = fitted
        values = slope * x + intercept
        # The fit pivots on one of the series' points, so at least that bar touches.
        touches = max(1, int(np.count_nonzero(np.abs(series - values) <= tolerance)))
        return TrendLine(
            slope=slope, intercept=intercept, last_value=float(values[-1]), touches=touches
        )

    return TrendLines(
        bars=closes.size,
        last_close=float(closes[-1]),
        close_support=line(close_support, closes),
        close_resistance=line(close_resistance, closes),
        high_low_support=line(high_low_support, lows),
        high_low_resistance=line(high_low_resistance, highs),
    )
