"""The two charts QuantAgent's vision agents read: patterns (last 40 bars), trend (last 50).

Both return PNG bytes in memory; the caller picks where they are stored, so no
run ever overwrites another's chart. The trend chart also returns its lines as
numbers, fitted on exactly the bars it draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from shared.charts.candles import RENDER_LOCK, candle_figure, chart_window, png_bytes
from shared.market.bars import Bar
from shared.ta.trend_summary import TrendLines, summarize_trendlines

__all__ = [
    "PATTERN_BARS",
    "TREND_BARS",
    "TREND_LINE_STYLES",
    "TrendLineStyle",
    "render_pattern_chart",
    "render_trend_chart",
    "trend_figure",
]

PATTERN_BARS = 40
TREND_BARS = 50
"""Window lengths of QuantAgent's pattern and trend agents."""

LINE_OVERSHOOT = 0.25
"""How far beyond the candles' range (as a share of it) the y-axis may grow to show the
lines; a steep line is clipped there rather than squashing the candles flat."""

LINE_MARGIN = 0.03
"""Space kept between a line's end and the frame, as a share of the candles' range."""


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
    last: int = PATTERN_BARS,
    volume: bool = True,
) -> bytes:
    """PNG of the last ``last`` candles (with volume), for the pattern agent.

    Raises ``InvalidInput`` on ``bars`` when fewer than ``last`` are given or they are
    unusable (order, prices), and on ``timeframe`` when it is not a known one.
    """
    window = chart_window(bars, last)
    with RENDER_LOCK:
        figure, _ = candle_figure(window, symbol=symbol, timeframe=timeframe, volume=volume)
        return png_bytes(figure)


def render_trend_chart(
    bars: Sequence[Bar], *, symbol: str, timeframe: str, last: int = TREND_BARS
) -> tuple[bytes, TrendLines]:
    """PNG of the last ``last`` candles with the four trendlines, and those lines.

    Raises ``InvalidInput`` as ``render_pattern_chart`` does.
    """
    with RENDER_LOCK:
        figure, lines = trend_figure(bars, symbol=symbol, timeframe=timeframe, last=last)
        return png_bytes(figure), lines


def trend_figure(
    bars: Sequence[Bar], *, symbol: str, timeframe: str, last: int = TREND_BARS
) -> tuple[Figure, TrendLines]:
    """The trend chart as a matplotlib figure (to inspect it), and its lines.

    Not thread-safe on its own: ``render_trend_chart`` holds ``RENDER_LOCK`` around it.
    """
    window = chart_window(bars, last)
    lines = summarize_trendlines(window["high"], window["low"], window["close"])
    figure, price = candle_figure(window, symbol=symbol, timeframe=timeframe, volume=False)
    _draw_trendlines(price, lines)
    figure.legend(
        loc="outside lower center",
        ncols=len(TREND_LINE_STYLES),
        frameon=False,
        fontsize=10,
        title="trendlines, with their value at the last bar",
        title_fontsize=10,
    )
    return figure, lines


def _draw_trendlines(axes: Axes, lines: TrendLines) -> None:
    """Draw each line across the window, widening the y-axis (within limits) to show them."""
    candles_low, candles_high = axes.get_ylim()
    span = candles_high - candles_low
    low, high = candles_low, candles_high
    for name, line in lines.named().items():
        style = TREND_LINE_STYLES[name]
        ends = (line.intercept, line.last_value)
        axes.plot(
            (0, lines.bars - 1),
            ends,
            color=style.colour,
            linestyle=style.linestyle,
            linewidth=2.0,
            label=f"{style.label}  {line.last_value:.6g}",
            zorder=4,
        )
        # A little air above and below a line's end, so it does not merge into the frame.
        low, high = (
            min(low, min(ends) - LINE_MARGIN * span),
            max(high, max(ends) + LINE_MARGIN * span),
        )
    reach = LINE_OVERSHOOT * span
    axes.set_ylim(max(low, candles_low - reach), min(high, candles_high + reach))
