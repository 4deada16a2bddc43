"""The tools that compute from the data rather than return it: indicators by name against
TA-Lib's own calls, and the screens, run through ``run_tool`` over test_data_tools.py's
``FakeVendor``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
import talib

from shared.market.bars import Bar
from shared.ta.indicator_names import IndicatorByName
from shared.ta.indicators_by_name import INDICATORS_BY_NAME, Prices
from shared.tools.market_tools import WARMUP_BARS
from tests.test_data_tools import (
    AS_OF,
    FakeVendor,
    _trade,
    _walk,
    answer_of,
    call_tool,
    services_over,
)

# --- Indicators by name ----------------------------------------------------------------

DIRECT_CALLS: dict[str, Callable[[Prices], Any]] = {
    "sma_50": lambda p: talib.SMA(p.close, 50),
    "sma_200": lambda p: talib.SMA(p.close, 200),
    "ema_10": lambda p: talib.EMA(p.close, 10),
    "macd": lambda p: talib.MACD(p.close, fastperiod=12, slowperiod=26, signalperiod=9)[0],
    "macds": lambda p: talib.MACD(p.close, fastperiod=12, slowperiod=26, signalperiod=9)[1],
    "macdh": lambda p: talib.MACD(p.close, fastperiod=12, slowperiod=26, signalperiod=9)[2],
    "rsi": lambda p: talib.RSI(p.close, 14),
    "boll": lambda p: talib.BBANDS(p.close, 20, nbdevup=2, nbdevdn=2)[1],
    "boll_ub": lambda p: talib.BBANDS(p.close, 20, nbdevup=2, nbdevdn=2)[0],
    "boll_lb": lambda p: talib.BBANDS(p.close, 20, nbdevup=2, nbdevdn=2)[2],
    "atr": lambda p: talib.ATR(p.high, p.low, p.close, 14),
    "vwma": lambda p: (
        talib.SMA((p.high + p.low + p.close) / 3 * p.volume, 14) / talib.SMA(p.volume, 14)
    ),
    "mfi": lambda p: talib.MFI(p.high, p.low, p.close, p.volume, 14),
}
"""The TradingAgents names as direct TA-Lib calls, written out rather than read from the table."""


def test_direct_calls_cover_every_name() -> None:
    assert set(DIRECT_CALLS) == set(IndicatorByName)


def test_indicators_by_name_match_direct_talib_calls() -> None:
    bars = _walk("AAA", 400)
    vendor = FakeVendor(bars={"AAA": bars})

    answer = answer_of(
        call_tool(
            "get_indicators",
            {"symbol": "AAA", "names": list(IndicatorByName), "values": 5},
            services_over(vendor),
        )
    )

    ((_, asked, read),) = vendor.reads
    assert asked["as_of"] == AS_OF
    assert asked["lookback"] == 200 + 5 - 1 + WARMUP_BARS
    data = answer["data"]
    assert data["bars_read"] == len(read)
    assert data["times"][-1].startswith(bars[-1].time.date().isoformat())
    prices = Prices.of(read)
    for name, direct in DIRECT_CALLS.items():
        expected = direct(prices)[-5:]
        assert data["indicators"][name]["values"] == pytest.approx(list(expected), rel=1e-5), name
        assert data["indicators"][name]["latest"] == pytest.approx(expected[-1], rel=1e-5)


def test_indicator_warm_up_is_null_not_zero() -> None:
    vendor = FakeVendor(bars={"AAA": _walk("AAA", 40)})

    answer = answer_of(
        call_tool(
            "get_indicators", {"symbol": "AAA", "names": ["sma_50", "rsi"]}, services_over(vendor)
        )
    )

    indicators = answer["data"]["indicators"]
    assert indicators["sma_50"]["values"] == [None] * 10
    assert indicators["sma_50"]["latest"] is None
    assert indicators["sma_50"]["bars_needed"] == 50
    assert all(value is not None for value in indicators["rsi"]["values"])


def test_bars_needed_is_where_talib_gives_its_first_value() -> None:
    prices = Prices.of(_walk("BBB", 300))

    for name, row in INDICATORS_BY_NAME.items():
        values = row.compute(talib, prices)
        assert int(np.argmax(np.isfinite(values))) + 1 == row.bars_needed, name


# --- Screens ---------------------------------------------------------------------------


def _with_last(bars: list[Bar], *, close: float, volume: float) -> list[Bar]:
    """``bars`` with a new last bar around ``close``."""
    last = Bar(
        time=bars[-1].time,
        open=close,
        high=close * 1.002,
        low=close * 0.998,
        close=close,
        volume=volume,
    )
    return [*bars[:-1], last]


def _screen_vendor() -> FakeVendor:
    """AAA spikes in volume, BBB closes 5% above its 52-week high, CCC has no data at all."""
    aaa = _walk("AAA", 300)
    bbb = _walk("BBB", 300)
    xle = _walk("XLE", 300)
    return FakeVendor(
        bars={
            "AAA": _with_last(aaa, close=min(bar.low for bar in aaa), volume=1e6),
            "BBB": _with_last(
                bbb, close=max(bar.high for bar in bbb[-253:-1]) * 1.05, volume=bbb[-1].volume
            ),
            # An ETF: outside the equity screens whatever it does.
            "XLE": _with_last(xle, close=xle[-1].close * 2, volume=1e9),
        },
        trades={
            "AAA": [
                _trade("AAA", "buy", 1_500, 2, "A. One"),
                _trade("AAA", "buy", 600, 5, "B. Two"),
            ],
            "BBB": [_trade("BBB", "buy", 100, 1), _trade("BBB", "sell", 5_000, 3)],
        },
    )


def test_unusual_volume_screen_finds_the_volume_spike() -> None:
    vendor = _screen_vendor()

    answer = answer_of(call_tool("screen_unusual_volume", {}, services_over(vendor)))

    data = answer["data"]
    assert [row["symbol"] for row in data["rows"]] == ["AAA"]
    assert data["rows"][0]["relative_volume"] > 5
    assert (data["screened"], data["without_data"], data["passed"]) == (3, 1, 1)
    assert {asked["as_of"] for _, asked, _ in vendor.reads} == {AS_OF}


def test_insider_buying_screen_keeps_buyers_above_the_minimum() -> None:
    vendor = _screen_vendor()

    answer = answer_of(
        call_tool("screen_insider_buying", {"min_value": 50_000, "days": 10}, services_over(vendor))
    )

    (row,) = answer["data"]["rows"]
    assert row["symbol"] == "AAA"
    assert row["buy_value"] == 2_100 * 100.0
    assert row["insiders"] == ["A. One", "B. Two"]
    insider_reads = [asked for kind, asked, _ in vendor.reads if kind == "insider"]
    assert {(a["as_of"], a["window"]) for a in insider_reads} == {(AS_OF, timedelta(days=10))}


def test_breakout_screen_finds_the_new_52_week_high() -> None:
    vendor = _screen_vendor()

    answer = answer_of(call_tool("screen_52_week_high_breakouts", {}, services_over(vendor)))

    (row,) = answer["data"]["rows"]
    assert row["symbol"] == "BBB"
    assert row["pct_above"] == pytest.approx(5.0, abs=0.01)
    bar_reads = [asked for kind, asked, _ in vendor.reads if kind == "ohlcv"]
    assert {a["lookback"] for a in bar_reads} == {253}


def test_a_screen_without_history_passes_nobody() -> None:
    vendor = FakeVendor(bars={"AAA": _walk("AAA", 10)})

    answer = answer_of(call_tool("screen_52_week_high_breakouts", {}, services_over(vendor)))

    assert answer["data"]["rows"] == []
    assert answer["data"]["without_data"] == 2
