"""QuantAgent's indicators and tools: TA-Lib's numbers, warm-up kept missing, short windows refused.

The oracle is a direct TA-Lib call on the same real bars (GOOG daily, EURUSD hourly).
The bars-needed formulas are checked against ``talib.abstract``'s lookback and against
where TA-Lib's first value really appears, for the defaults (exact numbers below) and
for random periods within the bounds.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import talib
from annotated_types import Ge, Le
from hypothesis import given, settings
from hypothesis import strategies as st
from talib import abstract

from shared.errors import InvalidInput
from shared.llm.contracts import ToolCall, ToolRequest, ToolResult
from shared.market.bars import Bar
from shared.market.sources import BundledSource
from shared.ta.indicators import (
    INDICATORS,
    IndicatorName,
    compute_indicator,
    indicator_spec,
    latest_indicator_values,
)
from shared.tools import catalog  # noqa: F401  (registers every tool, as workers do)
from shared.tools.indicator_tools import INDICATOR_TOOL_NAMES, VALUES_SHOWN
from shared.tools.registry import TOOLS, run_tool, tool_specs

DEFAULT_BARS_NEEDED = {
    IndicatorName.MACD: 34,  # TA-Lib lookback 33: slow 26 + signal 9 - 1
    IndicatorName.RSI: 15,  # lookback 14: period + 1
    IndicatorName.ROC: 11,  # lookback 10: period + 1
    IndicatorName.STOCH: 18,  # lookback 17: fastk 14 + slowk 3 + slowd 3 - 2
    IndicatorName.WILLR: 14,  # lookback 13: period
}
"""Bars needed for a first value with QuantAgent's parameters, verified against TA-Lib."""

DIRECT_CALLS = {
    IndicatorName.MACD: lambda h, lo, c: talib.MACD(c, 12, 26, 9),
    IndicatorName.RSI: lambda h, lo, c: (talib.RSI(c, 14),),
    IndicatorName.ROC: lambda h, lo, c: (talib.ROC(c, 10),),
    IndicatorName.STOCH: lambda h, lo, c: talib.STOCH(
        h, lo, c, fastk_period=14, slowk_period=3, slowd_period=3
    ),
    IndicatorName.WILLR: lambda h, lo, c: (talib.WILLR(h, lo, c, 14),),
}
"""QuantAgent's calls, written out by hand rather than read from the table under test."""

WINDOWS = {("GOOG", "1d"): 250, ("EURUSD", "1h"): 500}


def _bars(symbol: str, timeframe: str, lookback: int | None = None) -> list[Bar]:
    return BundledSource().read(symbol, timeframe, lookback=lookback)


def _arrays(bars: list[Bar]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """High, low and close, as TA-Lib takes them."""
    high, low, close = (np.array([getattr(b, f) for b in bars]) for f in ("high", "low", "close"))
    return high, low, close


def _as_array(values: list[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values])


def _lookback(name: IndicatorName, parameters: dict[str, int]) -> int:
    function = abstract.Function(INDICATORS[name].function)
    function.set_parameters(parameters)
    return int(function.lookback)


GOOG = _bars("GOOG", "1d", 400)
"""Enough bars for the longest periods the bounds allow (MACD 100/200/100 needs 299)."""


# --- The indicators -----------------------------------------------------------------------


@pytest.mark.parametrize("window", list(WINDOWS), ids=lambda w: f"{w[0]}-{w[1]}")
@pytest.mark.parametrize("name", list(IndicatorName))
def test_indicator_equals_direct_talib_call_with_nan_kept(
    name: IndicatorName, window: tuple[str, str]
) -> None:
    bars = _bars(*window, lookback=WINDOWS[window])
    expected = DIRECT_CALLS[name](*_arrays(bars))

    series = compute_indicator(name, bars)

    assert list(series.values) == list(INDICATORS[name].outputs)
    for output, want in zip(series.values, expected, strict=True):
        # Exact: NaN exactly where TA-Lib has NaN, TA-Lib's very floats everywhere else.
        np.testing.assert_array_equal(_as_array(series.values[output]), want)
        assert series.latest[output] == want[-1]
    assert series.times == [bar.time for bar in bars]


@pytest.mark.parametrize("name", list(IndicatorName))
def test_warm_up_is_none_never_zero(name: IndicatorName) -> None:
    series = compute_indicator(name, GOOG)

    for values in series.values.values():
        warm_up, rest = values[: series.bars_needed - 1], values[series.bars_needed - 1 :]
        assert warm_up == [None] * (DEFAULT_BARS_NEEDED[name] - 1)
        assert None not in rest


@pytest.mark.parametrize("name", list(IndicatorName))
def test_default_bars_needed_is_talib_lookback_plus_one(name: IndicatorName) -> None:
    defaults = INDICATORS[name].parameters().model_dump()
    first_values = [int(np.argmax(~np.isnan(o))) for o in DIRECT_CALLS[name](*_arrays(GOOG))]

    series = compute_indicator(name, GOOG)

    assert series.bars_needed == DEFAULT_BARS_NEEDED[name]
    assert series.bars_needed == _lookback(name, defaults) + 1
    assert first_values == [DEFAULT_BARS_NEEDED[name] - 1] * len(first_values)


@pytest.mark.parametrize("name", list(IndicatorName))
def test_window_one_bar_short_is_refused_with_counts(name: IndicatorName) -> None:
    needed = DEFAULT_BARS_NEEDED[name]

    with pytest.raises(InvalidInput) as refused:
        compute_indicator(name, GOOG[-(needed - 1) :])

    assert refused.value.field == "bars"
    assert f"needs at least {needed} bars" in str(refused.value)
    assert f"but {needed - 1} were given" in str(refused.value)


@pytest.mark.parametrize("name", list(IndicatorName))
def test_window_of_exactly_bars_needed_gives_one_value(name: IndicatorName) -> None:
    needed = DEFAULT_BARS_NEEDED[name]

    series = compute_indicator(name, GOOG[-needed:])

    for values in series.values.values():
        assert values[:-1] == [None] * (needed - 1)
        assert values[-1] is not None


def _periods(name: IndicatorName) -> st.SearchStrategy[dict[str, int]]:
    """Any periods within the bounds the parameters model declares."""
    strategies = {}
    for field, info in INDICATORS[name].parameters.model_fields.items():
        low = next(m.ge for m in info.metadata if isinstance(m, Ge))
        high = next(m.le for m in info.metadata if isinstance(m, Le))
        strategies[field] = st.integers(low, high)
    return st.fixed_dictionaries(strategies)


@pytest.mark.parametrize("name", list(IndicatorName))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_bars_needed_matches_talib_for_any_periods_in_bounds(
    name: IndicatorName, data: st.DataObject
) -> None:
    periods = data.draw(_periods(name))
    if name == IndicatorName.MACD and periods["fastperiod"] >= periods["slowperiod"]:
        with pytest.raises(InvalidInput, match="must be below slowperiod"):
            compute_indicator(name, GOOG, **periods)
        return
    needed = INDICATORS[name].bars_needed(INDICATORS[name].parameters(**periods))

    short = GOOG[-(needed - 1) :] if needed > 1 else []
    with pytest.raises(InvalidInput, match=f"at least {needed} bars"):
        compute_indicator(name, short, **periods)
    series = compute_indicator(name, GOOG[-needed:], **periods)

    assert needed == _lookback(name, periods) + 1
    for values in series.values.values():
        assert values[:-1] == [None] * (needed - 1)
        assert values[-1] is not None


def test_series_json_has_null_not_zero_during_warm_up() -> None:
    series = compute_indicator("macd", GOOG[-34:])

    data = json.loads(series.model_dump_json())

    assert data["values"]["macd"][:33] == [None] * 33
    assert data["values"]["macd_signal"][33] is not None


def test_parameters_override_defaults() -> None:
    closes = _arrays(GOOG)[2]

    series = compute_indicator("rsi", GOOG, timeperiod=7)

    assert series.parameters == {"timeperiod": 7}
    assert series.bars_needed == 8
    assert series.latest["rsi"] == talib.RSI(closes, 7)[-1]


@pytest.mark.parametrize(
    ("name", "parameters", "field"),
    [
        ("rsi", {"timeperiod": 1}, "timeperiod"),
        ("stoch", {"slowd_period": 51}, "slowd_period"),
        ("willr", {"period": 14}, "period"),
        ("macd", {"fastperiod": 26, "slowperiod": 12}, "parameters"),
    ],
)
def test_bad_parameters_are_refused_naming_the_field(
    name: str, parameters: dict[str, int], field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        compute_indicator(name, GOOG, **parameters)

    assert refused.value.field == field


def test_unknown_indicator_is_refused_listing_the_known_ones() -> None:
    with pytest.raises(InvalidInput, match="macd, rsi, roc, stoch, willr"):
        indicator_spec("bollinger")


def test_latest_indicator_values_is_one_flat_mapping_of_every_output() -> None:
    high, low, close = _arrays(GOOG)

    latest = latest_indicator_values(GOOG)

    assert list(latest) == [o for spec in INDICATORS.values() for o in spec.outputs]
    assert latest["macd_hist"] == talib.MACD(close, 12, 26, 9)[2][-1]
    assert latest["stoch_d"] == talib.STOCH(high, low, close, 14, 3, 0, 3, 0)[1][-1]


def test_latest_indicator_values_refuses_a_window_too_short_for_any_of_them() -> None:
    with pytest.raises(
        InvalidInput, match=r"MACD\(12, 26, 9\) needs at least 34 bars .* but 20 were given"
    ):
        latest_indicator_values(GOOG[-20:])


# --- The tools ----------------------------------------------------------------------------


def _call(name: str, arguments: dict[str, Any], bars: list[Any]) -> ToolResult:
    request = ToolRequest(
        call=ToolCall(id="1", name=name, arguments=arguments), context={"bars": bars}
    )
    return run_tool(request)


def test_every_indicator_has_a_registered_tool() -> None:
    assert tuple(f"compute_{name}" for name in IndicatorName) == INDICATOR_TOOL_NAMES
    assert all(name in TOOLS for name in INDICATOR_TOOL_NAMES)


def test_tool_schemas_hide_bars_and_offer_the_periods() -> None:
    specs = {spec.name: spec for spec in tool_specs(INDICATOR_TOOL_NAMES, fixed=["bars"])}

    for name in IndicatorName:
        parameters = specs[f"compute_{name}"].parameters
        periods = set(INDICATORS[name].parameters.model_fields)
        assert set(parameters["properties"]) == periods
        assert "required" not in parameters
        assert "$defs" not in parameters
        for schema in parameters["properties"].values():
            assert {"default", "minimum", "maximum", "description"} <= set(schema)


def test_rsi_tool_returns_the_latest_value_over_context_bars() -> None:
    bars = [bar.model_dump(mode="json") for bar in GOOG]
    expected = talib.RSI(_arrays(GOOG)[2], 14)[-1]

    result = _call("compute_rsi", {"timeperiod": 14}, bars)

    assert result.ok, result.content
    answer = json.loads(result.content)
    assert answer["latest"]["rsi"] == pytest.approx(expected, rel=1e-5)
    assert answer["bars_given"] == len(GOOG)
    assert answer["values_shown"] == VALUES_SHOWN == len(answer["values"]["rsi"])
    assert answer["times"][-1].startswith(GOOG[-1].time.date().isoformat())


def test_model_provided_bars_are_overridden_by_context() -> None:
    bogus = [
        {"time": "2030-01-01T00:00:00Z", "open": 1, "high": 1, "low": 1, "close": 1, "volume": 0}
    ]

    result = _call("compute_rsi", {"bars": bogus}, GOOG)

    assert result.ok, result.content
    assert json.loads(result.content)["bars_given"] == len(GOOG)


def test_tool_answer_has_null_for_warm_up_on_a_short_window() -> None:
    result = _call("compute_macd", {}, GOOG[-34:])

    answer = json.loads(result.content)
    assert answer["values_shown"] == VALUES_SHOWN
    assert answer["values"]["macd"] == [None] * (VALUES_SHOWN - 1) + [answer["latest"]["macd"]]
    assert 0 not in answer["values"]["macd"]


def test_tool_shows_every_value_of_a_window_shorter_than_the_tail() -> None:
    answer = json.loads(_call("compute_willr", {}, GOOG[-20:]).content)

    assert answer["values_shown"] == 20
    assert answer["values"]["willr"][:13] == [None] * 13


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("compute_rsi", {"timeperiod": 500}, "timeperiod"),
        ("compute_stoch", {"fastk_period": 0}, "fastk_period"),
        ("compute_roc", {"period": 5}, "period"),  # unknown, so not silently ignored
    ],
)
def test_bad_period_is_an_error_result_naming_the_field(
    name: str, arguments: dict[str, int], field: str
) -> None:
    result = _call(name, arguments, GOOG)

    assert not result.ok
    assert f"{field}:" in result.content


def test_too_short_window_is_an_error_result_with_the_counts() -> None:
    result = _call("compute_macd", {"signalperiod": 10}, GOOG[-34:])

    assert not result.ok
    assert "invalid input `bars`" in result.content
    assert "MACD(12, 26, 10) needs at least 35 bars" in result.content
    assert "but 34 were given" in result.content


def test_tool_values_are_rounded_to_six_significant_digits() -> None:
    bars = _bars("EURUSD", "1h", 200)
    macd = talib.MACD(_arrays(bars)[2], 12, 26, 9)[0]

    answer = json.loads(_call("compute_macd", {}, bars).content)

    assert answer["latest"]["macd"] == float(f"{macd[-1]:.6g}") != 0
    assert answer["values"]["macd"] == [float(f"{v:.6g}") for v in macd[-VALUES_SHOWN:]]
