"""The run report's ticker chart, drawn with Pillow: the candles where the prices put them,
in the right fills, volume only when reported, and clear errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest

from shared.charts import report_chart
from shared.charts.png import png_dimensions
from shared.charts.report_chart import nice_ticks, render_report_chart
from shared.errors import InvalidInput
from shared.market.bars import Bar
from shared.market.sources import BundledSource
from tests.chart_pixels import count_colour, decoded, matches

LAST = 60
TOLERANCE = 8


def _bars(symbol: str = "GOOG", timeframe: str = "1d") -> list[Bar]:
    return BundledSource().read(symbol, timeframe, lookback=LAST)


def _is(pixel: np.ndarray, colour: str) -> bool:
    return bool(matches(pixel, colour, TOLERANCE))


def test_the_chart_is_a_1280_by_720_png_the_same_for_the_same_bars() -> None:
    bars = _bars()

    png = render_report_chart(bars, symbol="GOOG", timeframe="1d", last=LAST)

    assert png_dimensions(png) == (1280, 720)
    assert png == render_report_chart(bars, symbol="GOOG", timeframe="1d", last=LAST)
    assert png != render_report_chart(bars[:-1], symbol="GOOG", timeframe="1d", last=LAST - 1)


def test_each_body_is_filled_by_its_direction_where_its_prices_put_it() -> None:
    bars = _bars()
    pixels = decoded(render_report_chart(bars, symbol="GOOG", timeframe="1d", last=LAST))
    price, _ = report_chart._panels(bars, with_volume=True)
    slot = (price.right - price.left) / LAST

    checked = {"rising": 0, "falling": 0}
    for index, bar in enumerate(bars):
        top, bottom = price.y(max(bar.open, bar.close)), price.y(min(bar.open, bar.close))
        if bottom - top < 6:
            continue  # too thin a body to have an inside
        centre = pixels[round((top + bottom) / 2), round(price.left + (index + 0.5) * slot)]
        rising = bar.close >= bar.open
        assert _is(centre, report_chart.BACKGROUND if rising else report_chart.FALLING), index
        checked["rising" if rising else "falling"] += 1
    assert min(checked.values()) >= 5, checked


def test_the_highest_wick_reaches_the_highest_high() -> None:
    bars = _bars()
    pixels = decoded(render_report_chart(bars, symbol="GOOG", timeframe="1d", last=LAST))
    price, _ = report_chart._panels(bars, with_volume=True)
    highest = max(range(LAST), key=lambda i: bars[i].high)
    x = round(price.left + (highest + 0.5) * (price.right - price.left) / LAST)

    column = pixels[price.top + 2 : price.bottom - 2, x]
    inked = [row for row, pixel in enumerate(column) if _is(pixel, report_chart.EDGE)]

    assert abs(price.top + 2 + inked[0] - price.y(bars[highest].high)) <= 1.5


def test_volume_bars_only_when_the_source_reports_volume() -> None:
    bars = _bars("EURUSD", "1h")
    no_volume = [bar.model_copy(update={"volume": 0.0}) for bar in bars]

    drawn = decoded(render_report_chart(bars, symbol="EURUSD", timeframe="1h", last=LAST))
    bare = decoded(render_report_chart(no_volume, symbol="EURUSD", timeframe="1h", last=LAST))

    # Inside the volume panel's frame (text, antialiased, has greys of every shade).
    _, volume = report_chart._panels(bars, with_volume=True)
    assert volume is not None
    inside = np.s_[volume.top + 1 : volume.bottom, volume.left + 1 : volume.right]
    assert count_colour(drawn[inside], report_chart.VOLUME_UP, TOLERANCE) > 500
    assert count_colour(bare[inside], report_chart.VOLUME_UP, TOLERANCE) == 0


@pytest.mark.parametrize(
    ("low", "high", "count", "ticks"),
    [
        (138.1, 171.3, 7, [140.0, 145.0, 150.0, 155.0, 160.0, 165.0, 170.0]),
        (0.0, 1.6e8, 3, [0.0, 5e7, 1e8, 1.5e8]),
        (1.0712, 1.0791, 7, [1.072, 1.073, 1.074, 1.075, 1.076, 1.077, 1.078, 1.079]),
    ],
)
def test_price_labels_are_round_numbers_inside_the_range(
    low: float, high: float, count: int, ticks: list[float]
) -> None:
    assert nice_ticks(low, high, count) == pytest.approx(ticks)


@pytest.mark.parametrize(
    ("bars", "last", "timeframe", "field"),
    [
        (_bars()[:10], LAST, "1d", "bars"),
        (_bars(), 1, "1d", "last"),
        (_bars(), LAST, "7x", "timeframe"),
    ],
)
def test_bad_input_is_invalid_and_names_the_field(
    bars: list[Bar], last: int, timeframe: str, field: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        render_report_chart(bars, symbol="GOOG", timeframe=timeframe, last=last)

    assert f"`{field}`" in str(caught.value)
