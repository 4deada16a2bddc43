"""The four trendlines of QuantAgent's trend chart, as one reportable value.

The trend agent looks at close-based support and resistance and at support fitted
on the lows and resistance fitted on the highs. The chart draws them; this model
carries the same lines as numbers so the offline engine can reason about them and
a run's result can report them. Each line keeps its value at the window's last bar
next to the last close, because "is price above, below or between the lines now"
is the question the agent answers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from shared.ta.trendlines import fit_trendlines_high_low, fit_trendlines_single

__all__ = ["TrendLine", "TrendLines", "summarize_trendlines"]


class TrendLine(BaseModel):
    """A straight line over a window of bars, with x the bar's index in the window."""

    model_config = ConfigDict(frozen=True)

    slope: float = Field(description="price change per bar")
    intercept: float = Field(description="the line's value at the window's first bar (x = 0)")
    last_value: float = Field(description="the line's value at the window's last bar")


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
    """Fit all four lines on one window (``fit_trendlines_single`` and ``_high_low``).

    Raises ``InvalidInput`` as those fits do (too short, unequal or non-finite series).
    """
    closes = np.asarray(close, dtype=float)
    last_x = closes.size - 1
    (close_support, close_resistance) = fit_trendlines_single(closes)
    (high_low_support, high_low_resistance) = fit_trendlines_high_low(high, low, closes)

    def line(fitted: tuple[float, float]) -> TrendLine:
        slope, intercept = fitted
        return TrendLine(slope=slope, intercept=intercept, last_value=slope * last_x + intercept)

    return TrendLines(
        bars=closes.size,
        last_close=float(closes[-1]),
        close_support=line(close_support),
        close_resistance=line(close_resistance),
        high_low_support=line(high_low_support),
        high_low_resistance=line(high_low_resistance),
    )
