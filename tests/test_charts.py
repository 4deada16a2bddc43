"""The pattern and trend charts, and the activities that store them in a real S3."""

from __future__ import annotations

import io
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import matplotlib.pyplot as plt
import pytest
from PIL import Image
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError

from activities.charts import ChartActivities, ChartRequest
from shared.charts.candles import candle_figure, chart_window, drawing
from shared.charts.png import png_dimensions
from shared.charts.render import (
    TREND_LINE_STYLES,
    render_pattern_chart,
    render_trend_chart,
    trend_figure,
)
from shared.config import Settings
from shared.errors import InvalidInput
from shared.market.bars import Bar
from shared.market.sources import BundledSource
from shared.storage.buckets import CHARTS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore
from shared.ta.trendlines import fit_trendlines_high_low, fit_trendlines_single
from tests.chart_pixels import count_colour, decoded
from workers.main import plan_for
from workers.roles import WorkerRole

WINDOWS = [("GOOG", "1d"), ("EURUSD", "1h")]
MAX_PNG_BYTES = 250_000
MIN_LINE_PIXELS = 300
"""A line drawn across the plot leaves well over this many pixels of its colour; the
short sample of it in the legend leaves far fewer."""


def _bars(symbol: str, timeframe: str) -> list[Bar]:
    return BundledSource().read(symbol, timeframe, lookback=60)


@pytest.mark.parametrize(("symbol", "timeframe"), WINDOWS)
def test_pattern_chart_is_a_png_sized_for_a_vision_model(symbol: str, timeframe: str) -> None:
    png = render_pattern_chart(_bars(symbol, timeframe), symbol=symbol, timeframe=timeframe)

    image = Image.open(io.BytesIO(png))
    image.load()
    assert image.format == "PNG"
    assert 1000 <= image.width <= 1600
    assert png_dimensions(png) == image.size
    assert len(png) < MAX_PNG_BYTES


@pytest.mark.parametrize(("symbol", "timeframe"), WINDOWS)
def test_trend_chart_draws_four_distinct_lines_across_the_plot(symbol: str, timeframe: str) -> None:
    png, _ = render_trend_chart(_bars(symbol, timeframe), symbol=symbol, timeframe=timeframe)

    pixels = decoded(png)
    assert 1000 <= pixels.shape[1] <= 1600
    assert len(png) < MAX_PNG_BYTES
    colours = {style.colour for style in TREND_LINE_STYLES.values()}
    assert len(colours) == 4
    for colour in colours:
        assert count_colour(pixels, colour) > MIN_LINE_PIXELS, colour


def test_trend_chart_legend_names_each_line_with_its_last_value() -> None:
    with drawing():
        figure, lines = trend_figure(_bars("GOOG", "1d"), symbol="GOOG", timeframe="1d")
        (legend,) = figure.legends
        texts = [text.get_text() for text in legend.get_texts()]
        plt.close(figure)

    expected = [
        f"{TREND_LINE_STYLES[name].label}  {line.last_value:.6g}"
        for name, line in lines.named().items()
    ]
    assert texts == expected


@pytest.mark.parametrize(("symbol", "timeframe"), WINDOWS)
def test_trendlines_are_fitted_on_the_last_50_bars(symbol: str, timeframe: str) -> None:
    bars = _bars(symbol, timeframe)
    window = bars[-50:]
    high, low, close = ([getattr(bar, f) for bar in window] for f in ("high", "low", "close"))

    _, lines = render_trend_chart(bars, symbol=symbol, timeframe=timeframe)

    single = fit_trendlines_single(close)
    high_low = fit_trendlines_high_low(high, low, close)
    fitted = [*single, *high_low]
    reported = [(line.slope, line.intercept) for line in lines.named().values()]
    assert reported == fitted
    assert lines.bars == 50
    assert lines.last_close == close[-1]
    slope, intercept = high_low[1]
    assert lines.high_low_resistance.last_value == pytest.approx(slope * 49 + intercept)


@pytest.mark.parametrize(
    ("render", "needed"), [(render_pattern_chart, 40), (render_trend_chart, 50)]
)
def test_too_few_bars_is_invalid_and_says_how_many_are_needed(render, needed: int) -> None:
    with pytest.raises(InvalidInput, match=f"at least {needed} bars but 30 were given") as caught:
        render(_bars("GOOG", "1d")[-30:], symbol="GOOG", timeframe="1d")

    assert caught.value.field == "bars"
    assert caught.value.fix


def test_unknown_timeframe_is_invalid_and_lists_the_known_ones() -> None:
    with pytest.raises(InvalidInput, match="1d"):
        render_pattern_chart(_bars("GOOG", "1d"), symbol="GOOG", timeframe="daily")


def test_volume_panel_is_left_out_when_the_source_reports_no_volume() -> None:
    bars = _bars("EURUSD", "1h")
    no_volume = [bar.model_copy(update={"volume": 0.0}) for bar in bars]

    panels = {}
    with drawing():
        for name, series in (("volume", bars), ("no volume", no_volume)):
            figure, _ = candle_figure(
                chart_window(series, 40), symbol="EURUSD", timeframe="1h", volume=True
            )
            # mplfinance gives each panel a twin y-axis and hides the twins it does not use.
            panels[name] = [axes.get_ylabel() for axes in figure.axes if axes.get_visible()]
            plt.close(figure)

    assert panels == {"volume": ["price", "volume"], "no volume": ["price"]}


def test_charts_rendered_from_many_threads_match_a_serial_render() -> None:
    bars = _bars("GOOG", "1d")
    serial = render_pattern_chart(bars, symbol="GOOG", timeframe="1d")

    with ThreadPoolExecutor(4) as pool:
        parallel = list(
            pool.map(lambda _: render_pattern_chart(bars, symbol="GOOG", timeframe="1d"), range(4))
        )

    assert parallel == [serial] * 4
    assert plt.get_fignums() == []


def test_png_dimensions_rejects_bytes_that_are_not_a_png() -> None:
    with pytest.raises(InvalidInput, match="not a PNG"):
        png_dimensions(b"GIF89a" + bytes(32))


def test_chart_request_and_result_cross_temporal_as_small_payloads() -> None:
    target = ObjectRef(bucket="charts", key="wf/run/trend.png")
    request = ChartRequest(symbol="GOOG", timeframe="1d", bars=_bars("GOOG", "1d"), target=target)
    converter = pydantic_data_converter.payload_converter

    (payload,) = converter.to_payloads([request])

    assert converter.from_payloads([payload], [ChartRequest]) == [request]
    assert len(payload.data) < 64_000


def test_charts_worker_registers_without_reaching_settings_or_s3() -> None:
    plan = plan_for(WorkerRole.CHARTS, Settings(s3={"endpoint": "127.0.0.1:1"}))

    names = [fn.__name__ for fn in plan.activities]
    assert {"render_pattern_chart", "render_trend_chart", "render_evaluation_plot"} <= set(names)
    assert len(names) == len(set(names))
    assert plan.threads


def _request(settings: Settings, key: str, bars: list[Bar]) -> ChartRequest:
    target = ObjectRef(bucket=CHARTS_BUCKET, key=key)
    return ChartRequest(symbol="GOOG", timeframe="1d", bars=bars, target=target)


def test_trend_activity_stores_the_png_and_its_url_serves_it(s3_settings: Settings) -> None:
    store = ObjectStore.from_settings(s3_settings)
    request = _request(s3_settings, "wf-charts/run-1/trend.png", _bars("GOOG", "1d"))

    result = ChartActivities(s3_settings).render_trend_chart(request)

    stored = store.get_bytes(result.chart)
    assert result.chart.key == "wf-charts/run-1/trend.png"
    assert result.chart.content_type == "image/png"
    assert (result.width, result.height, result.size_bytes) == (
        *png_dimensions(stored),
        len(stored),
    )
    assert result.trendlines is not None and result.trendlines.bars == 50
    with urllib.request.urlopen(result.url, timeout=10) as response:
        assert response.read() == stored
        assert response.headers["Content-Type"] == "image/png"


def test_pattern_activity_rerun_overwrites_the_same_key(s3_settings: Settings) -> None:
    activities = ChartActivities(store=ObjectStore.from_settings(s3_settings))
    bars = _bars("GOOG", "1d")
    key = "wf-charts/run-2/pattern.png"

    first = activities.render_pattern_chart(_request(s3_settings, key, bars[:-1]))
    second = activities.render_pattern_chart(_request(s3_settings, key, bars))

    stored = activities.store.get_bytes(second.chart)
    assert second.chart == first.chart
    assert second.trendlines is None
    assert stored == render_pattern_chart(bars, symbol="GOOG", timeframe="1d")
    assert stored != render_pattern_chart(bars[:-1], symbol="GOOG", timeframe="1d")


def test_activity_with_too_few_bars_fails_without_retrying(s3_settings: Settings) -> None:
    request = _request(s3_settings, "wf-charts/run-3/pattern.png", _bars("GOOG", "1d")[-10:])

    with pytest.raises(ApplicationError) as caught:
        ChartActivities(s3_settings).render_pattern_chart(request)

    assert caught.value.type == "InvalidInput"
    assert caught.value.non_retryable
    assert not ObjectStore.from_settings(s3_settings).exists(request.target)
