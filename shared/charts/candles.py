"""Candlestick figures drawn with mplfinance on the Agg backend, encoded to PNG in memory.

mplfinance draws through pyplot, which keeps global state: it registers every figure
and mplfinance rewrites ``rcParams`` to apply its style. So a chart is drawn and
encoded inside ``drawing()``, which holds ``RENDER_LOCK`` (the charts worker renders
from a thread pool, and pyplot is not thread-safe) and undoes the ``rcParams``
changes afterwards; ``png_bytes`` closes the figure, so pyplot keeps none open.

mplfinance draws bars at x = 0 .. n-1, their index in the window, not at their
times: weekends and overnight gaps leave no holes, and trendlines fitted with
x = bar index are straight lines in the same coordinates.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from io import BytesIO

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported (mplfinance imports it)

import matplotlib.pyplot as plt  # noqa: E402
import mplfinance as mpf  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import EngFormatter, FixedLocator, MaxNLocator  # noqa: E402

from shared.charts import look  # noqa: E402
from shared.errors import InvalidInput  # noqa: E402
from shared.market.bars import Bar, Timeframe, bars_to_frame, validate_bars  # noqa: E402

RENDER_LOCK = threading.Lock()
"""Held while a figure is drawn and encoded (pyplot and matplotlib's caches are not thread-safe)."""

FIGSIZE = (12.8, 7.2)
DPI = 100
"""1280 x 720 px: detailed enough for a vision model, and a PNG of well under 250 KB."""

_VOLUME_COLOURS = {"up": look.VOLUME_UP, "down": look.VOLUME_DOWN}
STYLE = mpf.make_mpf_style(
    base_mpf_style="default",
    marketcolors={
        **mpf.make_marketcolors(
            up=look.RISING,
            down=look.FALLING,
            edge=look.EDGE,
            wick=look.EDGE,
            volume=_VOLUME_COLOURS,
            alpha=1.0,
        ),
        # Not settable through make_marketcolors; equal to the fill, edges come out a shade darker.
        "vcedge": _VOLUME_COLOURS,
    },
    facecolor=look.BACKGROUND,
    gridcolor=look.GRID,
    gridstyle="-",
    y_on_right=True,
    rc={
        "font.size": 10.0,
        "font.weight": "normal",
        "axes.linewidth": 1.0,
        "axes.labelweight": "normal",
    },
)
"""Hollow rising and filled falling candles in greys, so coloured lines stand out."""

PADDING = {"left": 0.25, "right": 0.55, "top": 0.4, "bottom": 0.4}
"""Scales mplfinance's margins around the panels (its defaults leave a wide empty left edge)."""


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


@contextmanager
def drawing() -> Iterator[None]:
    """Hold ``RENDER_LOCK`` and restore pyplot's ``rcParams`` afterwards; draw and encode in here."""
    with RENDER_LOCK, plt.rc_context():
        yield


def candle_figure(
    frame: pd.DataFrame,
    *,
    symbol: str,
    timeframe: str,
    volume: bool,
    addplot: Sequence[dict] = (),
    ylim: tuple[float, float] | None = None,
    scale_padding: dict[str, float] = PADDING,
) -> tuple[Figure, Axes]:
    """A figure of candles titled with symbol, timeframe and dates; returns it and its price axes.

    ``addplot`` (``line_plot``s) and ``scale_padding`` go to ``mpf.plot``; ``ylim``
    defaults to ``candle_limits``. The volume panel is left out when asked, or when the
    source reports no volume (FX feeds often give zeros): an empty panel would only take
    space from the prices. Call inside ``drawing()`` and hand the figure to
    ``png_bytes`` (or ``plt.close`` it).
    """
    period = Timeframe.parse(timeframe)
    with_volume = volume and bool(frame["volume"].gt(0).any())
    figure, axes = mpf.plot(
        frame.rename(columns=str.capitalize),
        type="candle",
        style=STYLE,
        volume=with_volume,
        volume_exponent=0,
        volume_ylim=(0.0, 1.1 * float(frame["volume"].max())),
        addplot=list(addplot),
        xlim=(-1.0, float(len(frame))),
        ylim=ylim or candle_limits(frame),
        update_width_config={"candle_width": look.BODY_WIDTH, "volume_width": look.BODY_WIDTH},
        figsize=FIGSIZE,
        scale_padding=scale_padding,
        datetime_format=look.time_format(period),
        xrotation=0,
        ylabel="price",
        ylabel_lower="volume",
        returnfig=True,
    )
    price = axes[0]
    # x is shared by the panels: first, last and evenly spaced bars between, labelled
    # by mplfinance with their times.
    ticks = np.linspace(0, len(frame) - 1, look.X_TICKS).round()
    price.xaxis.set_major_locator(FixedLocator(np.unique(ticks).tolist()))
    price.set_title(look.chart_title(frame.index, symbol, period), loc="left", fontsize=13)
    if with_volume:
        volumes = axes[2]
        volumes.yaxis.set_major_locator(MaxNLocator(3, prune="lower"))
        volumes.yaxis.set_major_formatter(EngFormatter())
    return figure, price


def line_plot(values: np.ndarray, *, colour: str, linestyle: str, label: str) -> dict:
    """A line on the price panel, one value per bar, for ``candle_figure(addplot=...)``."""
    return mpf.make_addplot(
        values, color=colour, linestyle=linestyle, width=2.0, secondary_y=False, label=label
    )


def candle_limits(frame: pd.DataFrame) -> tuple[float, float]:
    """The candles' price range with ``look.CANDLE_MARGIN`` above and below."""
    low, high = float(frame["low"].min()), float(frame["high"].max())
    span = (high - low) or high * 0.01
    return low - look.CANDLE_MARGIN * span, high + look.CANDLE_MARGIN * span


def png_bytes(figure: Figure) -> bytes:
    """The figure as PNG bytes (metadata left out, so identical charts give identical bytes).

    Closes the figure: pyplot would otherwise keep it, and its memory, for the process.
    """
    buffer = BytesIO()
    try:
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    finally:
        plt.close(figure)
    return buffer.getvalue()
