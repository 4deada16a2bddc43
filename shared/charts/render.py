"""The two charts QuantAgent's vision agents read: patterns (last 40 bars), trend (last 50).

Both return PNG bytes in memory; the caller picks where they are stored, so no
run ever overwrites another's chart. The trend chart also returns its lines as
numbers, fitted on exactly the bars it draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from shared.agents.quantagent import PATTERN_WINDOW, TREND_WINDOW
from shared.charts.candles import (
    PADDING,
    candle_figure,
    candle_limits,
    chart_window,
    drawing,
    line_plot,
    png_bytes,
)
from shared.market.bars import Bar
from shared.ta.trend_summary import TrendLines, summarize_trendlines

__all__ = [
    "TREND_LINE_STYLES",
    "TrendLineStyle",
    "render_pattern_chart",
    "render_trend_chart",
    "trend_figure",
]

LINE_OVERSHOOT = 0.25
"""How far beyond the candles' range (as a share of it) the y-axis may grow to show the
lines; a steep line is clipped there rather than squashing the candles flat."""

LINE_MARGIN = 0.03
"""Space kept between a line's end and the frame, as a share of the candles' range."""

LEGEND_PADDING = {**PADDING, "bottom": 0.8}
"""Room under the price panel for the x labels and the two-row legend."""


@dataclass(frozen=True)
class TrendLineStyle:
    """How one trendline is drawn and named in the legend."""

    label: str
    colour: str
    linestyle: str


TREND_LINE_STYLES = {
    "close_support": TrendLineStyle("support (closes)", "#1f5bd6", "-"),
    "close_resistance": TrendLineStyle("resistance (closes)", "#d62728", "-"),
    "high_low_support": TrendLineStyle("support (lows)", "#1a9e3a", "--"),
    "high_low_resistance": TrendLineStyle("resistance (highs)", "#f28e00", "--"),
}
"""Keyed by ``TrendLines`` field: blue and red as the trend prompt names them, then two
hues far from both, dashed, so every line stays distinct on the grey candles."""


def render_pattern_chart(
    bars: Sequence[Bar],
    *,
    symbol: str,
    timeframe: str,
    last: int = PATTERN_WINDOW,
    volume: bool = True,
) -> bytes:
    """PNG of the last ``last`` candles (with volume), for the pattern agent.

    Raises ``InvalidInput`` on ``bars`` when fewer than ``last`` are given or they are
    unusable (order, prices), and on ``timeframe`` when it is not a known one.
    """
    window = chart_window(bars, last)
    with drawing():
        figure, _ = candle_figure(window, symbol=symbol, timeframe=timeframe, volume=volume)
        return png_bytes(figure)


def render_trend_chart(
    bars: Sequence[Bar], *, symbol: str, timeframe: str, last: int = TREND_WINDOW
) -> tuple[bytes, TrendLines]:
    """PNG of the last ``last`` candles with the four trendlines, and those lines.

    Raises ``InvalidInput`` as ``render_pattern_chart`` does.
    """
    with drawing():
        figure, lines = trend_figure(bars, symbol=symbol, timeframe=timeframe, last=last)
        return png_bytes(figure), lines


def trend_figure(
    bars: Sequence[Bar], *, symbol: str, timeframe: str, last: int = TREND_WINDOW
) -> tuple[Figure, TrendLines]:
    """The trend chart as a matplotlib figure (to inspect it), and its lines.

    A pyplot figure: call inside ``drawing()`` and ``plt.close`` it (``png_bytes`` does),
    as ``render_trend_chart`` does.
    """
    window = chart_window(bars, last)
    lines = summarize_trendlines(window["high"], window["low"], window["close"])
    x = np.arange(lines.bars)
    plots = [
        line_plot(
            line.slope * x + line.intercept,
            colour=TREND_LINE_STYLES[name].colour,
            linestyle=TREND_LINE_STYLES[name].linestyle,
            label=f"{TREND_LINE_STYLES[name].label}  {line.last_value:.6g}",
        )
        for name, line in lines.named().items()
    ]
    figure, price = candle_figure(
        window,
        symbol=symbol,
        timeframe=timeframe,
        volume=False,
        addplot=plots,
        ylim=_price_limits(window, lines),
        scale_padding=LEGEND_PADDING,
    )
    # mplfinance puts the labelled lines in a legend on the candles; move it under them.
    legend = price.get_legend()
    if legend is not None:
        legend.remove()
    figure.legend(
        *price.get_legend_handles_labels(),
        loc="lower center",
        ncols=len(TREND_LINE_STYLES),
        frameon=False,
        fontsize=10,
        title="trendlines, with their value at the last bar",
        title_fontsize=10,
    )
    return figure, lines


def _price_limits(window: pd.DataFrame, lines: TrendLines) -> tuple[float, float]:
    """The candles' range with a margin, widened (within limits) to show the lines' ends."""
    candles_low, candles_high = candle_limits(window)
    span = candles_high - candles_low
    ends = [end for line in lines.named().values() for end in (line.intercept, line.last_value)]
    # A little air above and below a line's end, so it does not merge into the frame.
    low = min(candles_low, min(ends) - LINE_MARGIN * span)
    high = max(candles_high, max(ends) + LINE_MARGIN * span)
    reach = LINE_OVERSHOOT * span
    return max(low, candles_low - reach), min(high, candles_high + reach)
