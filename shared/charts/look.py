"""What every candle chart shares, whoever draws it: its proportions, its title, its time
labels (mplfinance for the vision agents, ``shared.charts.report_chart`` for people)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from shared.market.bars import Timeframe

BODY_WIDTH = 0.6
"""Width of candle bodies and volume bars, in bars (mplfinance's volume bars would touch)."""

CANDLE_MARGIN = 0.05
"""Space above and below the candles, as a share of their range."""

X_TICKS = 8
"""Time labels on the x axis: the first bar, the last, and evenly spaced bars between."""

BACKGROUND, GRID, EDGE = "#ffffff", "#e6e6e6", "#202020"
RISING, FALLING = BACKGROUND, "#3a3a3a"
"""Hollow rising and filled falling candles in greys, with dark edges and wicks, so coloured
lines stand out."""
VOLUME_UP, VOLUME_DOWN = "#9e9e9e", FALLING


def time_format(timeframe: Timeframe) -> str:
    """Dates for daily and longer bars, dates with hours for intraday ones."""
    if timeframe.duration < Timeframe.D1.duration:
        return "%Y-%m-%d %H:%M"
    return "%Y-%m" if timeframe is Timeframe.MO1 else "%Y-%m-%d"


def chart_title(times: Sequence[datetime], symbol: str, timeframe: Timeframe) -> str:
    """Symbol, timeframe, the window's first and last bar, and how many bars it holds."""
    pattern = time_format(timeframe)
    return (
        f"{symbol}  ·  {timeframe.value}  ·  {times[0].strftime(pattern)} to "
        f"{times[-1].strftime(pattern)} UTC  ·  last {len(times)} bars"
    )
