"""The equity-curve PNG: the strategy against buy-and-hold, with the positions underneath.

Drawn with matplotlib's Agg backend through ``shared.charts.candles.drawing``,
which serialises pyplot between the charts worker's threads and restores its
settings, and encoded by ``png_bytes``, which closes the figure and leaves the
timestamp out (the same book gives the same bytes).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

import matplotlib.pyplot as plt

from shared.backtest.book import Book
from shared.backtest.report import daily_positions
from shared.charts.candles import FIGSIZE, drawing, png_bytes

STRATEGY_COLOUR = "#1f5bd6"
BENCHMARK_COLOUR = "#7f7f7f"
POSITION_COLOURS = {1: "#1a9e3a", -1: "#d62728"}
"""Long periods green, short ones red; flat ones stay blank."""


CUTOFF_COLOUR = "#9467bd"


def render_equity_chart(book: Book, cutoff: date | None = None) -> bytes:
    """PNG of both equity curves over the range (from 1) and the position held each day; a
    training ``cutoff`` inside the range is a dashed line, the steps left of it before it."""
    times = [point.time for point in book.schedule.prices]
    held = [int(position) for position in daily_positions(book)]
    first, last = times[0].date(), times[-1].date()
    with drawing():
        figure, (equity, exposure) = plt.subplots(
            2, 1, figsize=FIGSIZE, sharex=True, height_ratios=(4, 1)
        )
        equity.plot(times, book.equity(), color=STRATEGY_COLOUR, linewidth=1.6, label="strategy")
        equity.plot(
            times,
            book.buy_and_hold_equity(),
            color=BENCHMARK_COLOUR,
            linewidth=1.2,
            label="buy-and-hold",
        )
        equity.axhline(1.0, color="#bbbbbb", linewidth=0.8)
        if cutoff is not None and first <= cutoff <= last:
            equity.axvline(
                datetime.combine(cutoff, time(), tzinfo=UTC),
                color=CUTOFF_COLOUR,
                linestyle="--",
                linewidth=1.2,
                label=f"training cutoff {cutoff}",
            )
        equity.set_ylabel("equity (start = 1)")
        equity.set_title(
            f"{book.symbol}: {book.flow.value} walk-forward, {first} to {last}, "
            f"every {book.schedule.every} bar(s)"
        )
        equity.legend(loc="upper left")
        equity.grid(color="#e6e6e6")
        exposure.step(times, held, where="post", color="#404040", linewidth=1.0)
        for sign, colour in POSITION_COLOURS.items():
            # A series of its own per side rather than ``where=``, which cuts step fills short.
            side = [sign if h == sign else 0 for h in held]
            exposure.fill_between(times, 0, side, step="post", color=colour, alpha=0.35)
        exposure.set_yticks([-1, 0, 1], labels=["short", "flat", "long"])
        exposure.set_ylim(-1.3, 1.3)
        exposure.grid(color="#e6e6e6")
        figure.autofmt_xdate()
        return png_bytes(figure)
