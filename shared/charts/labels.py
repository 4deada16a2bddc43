"""How every chart names its window and labels its times."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from shared.market.bars import Timeframe


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
