"""Candlestick figures drawn with plain matplotlib, encoded to PNG in memory.

Why not mplfinance or pyplot: both keep global figure state, and the charts worker
renders from a thread pool. Here every chart is its own ``Figure`` on an Agg canvas,
never registered with pyplot, so nothing needs closing and no backend is switched
for the process. Matplotlib still shares caches (fonts, text layout) between
figures and is not documented as thread-safe, so callers draw and encode under
``RENDER_LOCK``; a chart takes a fraction of a second, so the lock costs little.

Bars are drawn at x = 0 .. n-1, their index in the window, not at their times:
weekends and overnight gaps leave no holes, and trendlines fitted with x = bar
index are straight lines in the same coordinates.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from io import BytesIO

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, FixedLocator, FuncFormatter, MaxNLocator

from shared.errors import InvalidInput
from shared.market.bars import Bar, Timeframe, bars_to_frame, validate_bars

RENDER_LOCK = threading.Lock()
"""Held while a figure is drawn and encoded (matplotlib's shared caches are not thread-safe)."""

FIGSIZE = (12.8, 7.2)
DPI = 100
"""1280 x 720 px: detailed enough for a vision model, and a PNG of well under 250 KB."""

UP_COLOUR = "#ffffff"
DOWN_COLOUR = "#3a3a3a"
EDGE_COLOUR = "#202020"
"""Hollow rising and filled falling candles in greys, so coloured lines stand out."""

BODY_WIDTH = 0.6
X_TICKS = 8
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chart_window(bars: Sequence[Bar], last: int) -> pd.DataFrame:
    """The last ``last`` bars as a frame, refusing fewer than a full window.

    A chart of fewer bars than the agent's prompt promises would mislead it, so a
    short series is an error that says how many bars to ask for.
    """
    if last < 2:
        raise InvalidInput("last", f"a chart needs a window of at least 2 bars, got {last}")
    window = bars[-last:]
    validate_bars(window, min_bars=last, field="bars")
    return bars_to_frame(window)


def candle_figure(
    frame: pd.DataFrame, *, symbol: str, timeframe: str, volume: bool
) -> tuple[Figure, Axes]:
    """A figure of candles titled with symbol, timeframe and dates; returns it and its price axes.

    The volume panel is left out when asked, or when the source reports no volume
    (FX feeds often give zeros): an empty panel would only take space from the prices.
    """
    period = Timeframe.parse(timeframe)
    figure = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    with_volume = volume and bool(frame["volume"].gt(0).any())
    if with_volume:
        price, volumes = figure.subplots(2, 1, sharex=True, height_ratios=(4, 1))
        _draw_volume(volumes, frame)
    else:
        price = figure.subplots()
    _draw_candles(price, frame)
    _label_times(volumes if with_volume else price, frame.index, period)
    price.set_ylabel("price")
    price.yaxis.tick_right()
    price.yaxis.set_label_position("right")
    price.grid(True, color="#e6e6e6", linewidth=0.6)
    price.set_axisbelow(True)
    price.set_title(_title(frame.index, symbol, period), loc="left", fontsize=13)
    return figure, price


def png_bytes(figure: Figure) -> bytes:
    """The figure as PNG bytes (metadata left out, so identical charts give identical bytes)."""
    buffer = BytesIO()
    FigureCanvasAgg(figure).print_png(buffer, metadata={"Software": None})
    return buffer.getvalue()


def png_dimensions(png: bytes) -> tuple[int, int]:
    """``(width, height)`` in pixels, read from the PNG header without decoding the image."""
    if png[:8] != _PNG_SIGNATURE or png[12:16] != b"IHDR":
        raise InvalidInput("png", "not a PNG image")
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def _draw_candles(axes: Axes, frame: pd.DataFrame) -> None:
    x = np.arange(len(frame))
    open_, high, low, close = (frame[c].to_numpy() for c in ("open", "high", "low", "close"))
    rising = close >= open_
    axes.vlines(x, low, high, color=EDGE_COLOUR, linewidth=1.0, zorder=2)
    # A doji has a zero-height body; its edge still draws it as a tick across the wick.
    axes.bar(
        x,
        np.abs(close - open_),
        bottom=np.minimum(open_, close),
        width=BODY_WIDTH,
        color=np.where(rising, UP_COLOUR, DOWN_COLOUR),
        edgecolor=EDGE_COLOUR,
        linewidth=1.0,
        zorder=3,
    )
    axes.set_xlim(-1, len(frame))
    span = float(high.max() - low.min()) or float(high.max()) * 0.01
    axes.set_ylim(float(low.min()) - 0.05 * span, float(high.max()) + 0.05 * span)


def _draw_volume(axes: Axes, frame: pd.DataFrame) -> None:
    rising = frame["close"].to_numpy() >= frame["open"].to_numpy()
    axes.bar(
        np.arange(len(frame)),
        frame["volume"].to_numpy(),
        width=BODY_WIDTH,
        color=np.where(rising, "#9e9e9e", DOWN_COLOUR),
    )
    axes.set_ylabel("volume")
    axes.yaxis.tick_right()
    axes.yaxis.set_label_position("right")
    axes.yaxis.set_major_locator(MaxNLocator(3))
    axes.yaxis.set_major_formatter(EngFormatter())


def _time_format(timeframe: Timeframe) -> str:
    """Dates for daily and longer bars, dates with hours for intraday ones."""
    if timeframe.duration < Timeframe.D1.duration:
        return "%Y-%m-%d %H:%M"
    return "%Y-%m" if timeframe is Timeframe.MO1 else "%Y-%m-%d"


def _label_times(axes: Axes, times: pd.DatetimeIndex, timeframe: Timeframe) -> None:
    """Tick a few bar indices and label them with the bars' times."""
    pattern = _time_format(timeframe)
    positions = np.unique(np.linspace(0, len(times) - 1, X_TICKS).round().astype(int))
    axes.xaxis.set_major_locator(FixedLocator(positions.tolist()))
    axes.xaxis.set_major_formatter(
        FuncFormatter(lambda x, _: times[int(x)].strftime(pattern) if 0 <= x < len(times) else "")
    )


def _title(times: pd.DatetimeIndex, symbol: str, timeframe: Timeframe) -> str:
    pattern = _time_format(timeframe)
    return (
        f"{symbol}  ·  {timeframe.value}  ·  {times[0].strftime(pattern)} to "
        f"{times[-1].strftime(pattern)} UTC  ·  last {len(times)} bars"
    )
