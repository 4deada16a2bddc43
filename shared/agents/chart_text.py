"""QuantAgent's two charts as text, for chart agents whose model cannot take images.

A text-only model (DeepSeek, a small local model) is shown what the chart is drawn
from instead of the picture: the bars as a compact table, the patterns the geometric
scan measured in them, and the four fitted trendlines as numbers. Small local models
have 4k-token contexts, so every number is rounded to what a chart shows: prices to
a twentieth of a typical bar's range, volumes to three significant digits, dates
without a time of day when the bars are daily or longer.

These run inside the workflow (the prompt is built there), so they use only the
standard library and depend on nothing but their arguments.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from shared.market.bars import Bar
from shared.ta.patterns import PatternMatch
from shared.ta.trend_summary import TOUCH_TOLERANCE_ATR, TrendLine, TrendLines

LINE_NAMES = {
    "close_support": "close-based support",
    "close_resistance": "close-based resistance",
    "high_low_support": "support on the lows",
    "high_low_resistance": "resistance on the highs",
}
"""How the prompt names each of ``TrendLines.named()``, as the chart's legend does."""

STEPS_PER_BAR_RANGE = 20
"""Prices resolve a twentieth of the median bar range or finer: a few pixels of a typical
candle on the 720-pixel chart, so the table keeps what the candles show and no more."""
MAX_PRICE_DECIMALS = 8
VOLUME_UNITS = ((1e9, "B"), (1e6, "M"), (1e3, "K"))


def price_decimals(bars: Sequence[Bar]) -> int:
    """Decimals for ``bars``' prices per ``STEPS_PER_BAR_RANGE`` (GOOG daily: 1, EURUSD
    hourly: 4 or 5). Like the chart's linear axis, one precision serves the whole window."""
    ranges = [bar.high - bar.low for bar in bars if bar.high > bar.low]
    scale = statistics.median(ranges) if ranges else bars[-1].close
    decimals = math.ceil(math.log10(STEPS_PER_BAR_RANGE / scale))
    return min(MAX_PRICE_DECIMALS, max(0, decimals))


def _volume(volume: float) -> str:
    for size, suffix in VOLUME_UNITS:
        if volume >= size:
            return f"{volume / size:.3g}{suffix}"
    return f"{volume:.3g}"


def _date_format(bars: Sequence[Bar]) -> str:
    daily = all(bar.time.hour == bar.time.minute == 0 for bar in bars)
    return "%Y-%m-%d" if daily else "%Y-%m-%d %H:%M"


def bar_table(bars: Sequence[Bar]) -> str:
    """The bars as CSV rows, oldest first, numbered from 0 as the chart's x axis is."""
    decimals = price_decimals(bars)
    when = _date_format(bars)
    rows = ["bar,time_utc,open,high,low,close,volume"]
    for index, bar in enumerate(bars):
        prices = ",".join(f"{p:.{decimals}f}" for p in (bar.open, bar.high, bar.low, bar.close))
        rows.append(f"{index},{bar.time.strftime(when)},{prices},{_volume(bar.volume)}")
    return "\n".join(rows)


def pattern_scan_text(matches: Sequence[PatternMatch]) -> str:
    """The geometric scan's matches, one line each with the bars and numbers behind it."""
    if not matches:
        return "The geometric scan found none of the sixteen patterns in these bars."
    lines = ["The geometric scan measured (its confidence is a product of textbook criteria):"]
    for match in matches:
        lines.append(
            f"- {match.name.value}: {match.bias.value}, confidence {match.confidence:.2f}, "
            f"bars {match.start_index}-{match.end_index}. {match.description}"
        )
    return "\n".join(lines)


def _touches(count: int | None) -> str:
    if count is None:
        return "touches not counted"
    return "1 touch" if count == 1 else f"{count} touches"


def _line_text(name: str, line: TrendLine, lines: TrendLines, decimals: int) -> str:
    gap = round(lines.last_close - line.last_value, decimals)
    where = "on it" if gap == 0 else f"{gap:+.{decimals}f} from it"
    return (
        f"- {LINE_NAMES[name]}: slope {line.slope:+.3g} per bar, {line.intercept:.{decimals}f} "
        f"at bar 0, {line.last_value:.{decimals}f} at bar {lines.bars - 1}, "
        f"{_touches(line.touches)}; last close {where}"
    )


def trendlines_text(lines: TrendLines, bars: Sequence[Bar]) -> str:
    """The four fitted lines over ``bars`` (the window they were fitted on) as numbers."""
    decimals = price_decimals(bars)
    header = (
        f"Trendlines over bars 0-{lines.bars - 1} (a touch: a bar within "
        f"{TOUCH_TOLERANCE_ATR:g} average bar ranges of the line); "
        f"last close {lines.last_close:.{decimals}f}:"
    )
    body = [_line_text(name, line, lines, decimals) for name, line in lines.named().items()]
    return "\n".join([header, *body])
