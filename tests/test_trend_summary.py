"""The four trendlines as numbers: each line's touches, counted on the series it was fitted to."""

from __future__ import annotations

import numpy as np
import pytest

from shared.market.sources import BundledSource
from shared.ta.pivots import true_ranges
from shared.ta.trend_summary import TOUCH_TOLERANCE_ATR, TrendLine, summarize_trendlines

WINDOW = 50


def test_a_level_revisited_every_other_bar_is_touched_by_those_bars() -> None:
    # Closes zigzag between a floor of 100 and a ceiling of 110; bar 10 comes within a
    # tenth of an ATR of the floor (a touch), bar 12 within half an ATR (no touch).
    close = np.array([100.0 if i % 2 == 0 else 110.0 for i in range(20)])
    high, low = close + 1, close - 1
    atr = float(true_ranges(high, low, close).mean())
    close[10] += 0.5 * TOUCH_TOLERANCE_ATR * atr
    close[12] += 2.5 * TOUCH_TOLERANCE_ATR * atr
    high, low = close + 1, close - 1

    lines = summarize_trendlines(high, low, close)

    assert lines.close_support.last_value == pytest.approx(100.0, abs=1e-4)  # the floor
    assert lines.close_support.touches == 9  # ten floor bars, less bar 12
    assert lines.close_resistance.touches == 10
    assert lines.high_low_support.touches == 9  # the lows: the closes less one
    assert lines.high_low_resistance.touches == 10


@pytest.mark.parametrize(("symbol", "timeframe"), [("GOOG", "1d"), ("EURUSD", "1h")])
def test_every_line_on_real_windows_is_touched_at_its_pivot_and_by_few_bars(
    symbol: str, timeframe: str
) -> None:
    series = BundledSource().read(symbol, timeframe)
    for end in range(WINDOW, len(series), len(series) // 40):
        bars = series[end - WINDOW : end]
        lines = summarize_trendlines(
            [b.high for b in bars], [b.low for b in bars], [b.close for b in bars]
        )
        for line in lines.named().values():
            assert line.touches is not None
            # A line hugging most of the window would make "touches" meaningless.
            assert 1 <= line.touches <= WINDOW // 2, (end, line)


def test_lines_recorded_before_touches_were_counted_still_decode() -> None:
    line = TrendLine.model_validate({"slope": 0.5, "intercept": 550.0, "last_value": 574.5})

    assert line.touches is None
