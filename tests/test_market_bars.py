"""Bar, Timeframe, validate_bars and the frame helpers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from shared.errors import InvalidInput
from shared.market.bars import (
    COLUMNS,
    Bar,
    Timeframe,
    bars_to_frame,
    frame_to_bars,
    validate_bars,
)

START = datetime(2024, 1, 1, tzinfo=UTC)


def make_bars(count: int = 4) -> list[Bar]:
    return [
        Bar(time=START + timedelta(days=i), open=10, high=12, low=9, close=11, volume=100)
        for i in range(count)
    ]


def test_bar_rejects_naive_time() -> None:
    with pytest.raises(ValidationError, match="naive datetime"):
        Bar(time=datetime(2024, 1, 1), open=1, high=1, low=1, close=1, volume=0)


def test_bar_normalises_aware_time_to_utc() -> None:
    paris = timezone(timedelta(hours=1))

    bar = Bar(time=datetime(2024, 1, 1, 1, tzinfo=paris), open=1, high=1, low=1, close=1, volume=0)

    assert bar.time == START
    assert bar.time.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("field", "value"), [("open", 0.0), ("close", -1.0), ("high", float("nan")), ("volume", -1.0)]
)
def test_bar_rejects_values_no_market_has(field: str, value: float) -> None:
    values = {"time": START, "open": 1.0, "high": 1.0, "low": 1.0, "close": 1.0, "volume": 0.0}

    with pytest.raises(ValidationError, match=field):
        Bar(**{**values, field: value})


def test_bar_survives_json_as_temporal_sends_it() -> None:
    bar = make_bars(1)[0]

    assert Bar.model_validate_json(bar.model_dump_json()) == bar


def test_timeframe_durations_match_their_names() -> None:
    assert Timeframe("4h").duration == timedelta(hours=4)
    assert Timeframe("1wk").duration == timedelta(weeks=1)
    assert [tf.value for tf in Timeframe] == [
        "1m",
        "5m",
        "15m",
        "30m",
        "1h",
        "4h",
        "1d",
        "1wk",
        "1mo",
    ]


def test_timeframe_parse_lists_supported_timeframes() -> None:
    with pytest.raises(InvalidInput, match="unknown timeframe '2d'.*1m, 5m.*1mo") as caught:
        Timeframe.parse("2d")

    assert caught.value.field == "timeframe"


def test_validate_bars_accepts_consistent_bars() -> None:
    assert validate_bars(make_bars()) is None


def _bad(column: str, value: float) -> pd.DataFrame:
    frame = bars_to_frame(make_bars())
    frame.loc[frame.index[2], column] = value
    return frame


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (_bad("open", float("nan")), "open is not finite"),
        (_bad("close", float("inf")), "close is not finite"),
        (_bad("low", 0.0), "low is not positive"),
        (_bad("high", 10.5), r"high is below max\(open, close\) \(10.5 vs 11.0\)"),
        (_bad("low", 10.5), r"low is above min\(open, close\) \(10.5 vs 10.0\)"),
        (_bad("volume", -5.0), "volume is negative"),
        (_bad("volume", float("nan")), "volume is not finite"),
    ],
)
def test_validate_bars_names_the_bad_row_and_reason(frame: pd.DataFrame, reason: str) -> None:
    with pytest.raises(InvalidInput, match=f"row 2 at 2024-01-03T00:00:00\\+00:00: {reason}"):
        validate_bars(frame)


def test_validate_bars_rejects_duplicate_times() -> None:
    bars = make_bars()
    bars[2] = bars[2].model_copy(update={"time": bars[1].time})

    with pytest.raises(InvalidInput, match="row 2 at 2024-01-02.*the same as row 1"):
        validate_bars(bars)


def test_validate_bars_rejects_unsorted_times() -> None:
    bars = make_bars()
    bars[1], bars[2] = bars[2], bars[1]

    with pytest.raises(InvalidInput, match="row 2 at 2024-01-02.*earlier than row 1. Sort"):
        validate_bars(bars)


def test_validate_bars_says_how_many_bars_are_needed_and_given() -> None:
    with pytest.raises(InvalidInput, match="needs at least 50 bars but 4 were given") as caught:
        validate_bars(make_bars(), min_bars=50, field="request.bars")

    assert caught.value.field == "request.bars"


def test_validate_bars_counts_other_rows_with_the_problem() -> None:
    frame = bars_to_frame(make_bars())
    frame["volume"] = -1.0

    with pytest.raises(InvalidInput, match="row 0 .*; 3 other rows have it too"):
        validate_bars(frame)


def test_validate_bars_rejects_frame_without_timezone() -> None:
    frame = bars_to_frame(make_bars()).tz_localize(None)

    with pytest.raises(InvalidInput, match="times have no timezone"):
        validate_bars(frame)


def test_bars_to_frame_has_utc_index_and_ohlcv_columns() -> None:
    frame = bars_to_frame(make_bars())

    assert list(frame.columns) == list(COLUMNS)
    assert str(frame.index.tz) == "UTC"
    assert frame.index.name == "time"
    assert frame["close"].dtype == np.float64


def test_bars_to_frame_of_no_bars_is_an_empty_bar_frame() -> None:
    frame = bars_to_frame([])

    assert frame.empty
    assert list(frame.columns) == list(COLUMNS)
    assert str(frame.index.tz) == "UTC"


def test_frame_to_bars_names_the_bad_row() -> None:
    with pytest.raises(InvalidInput, match="invalid input `prices`: row 2 .*high is below"):
        frame_to_bars(_bad("high", 1.0), field="prices")


prices = st.floats(min_value=0.01, max_value=1e6, allow_nan=False)


@st.composite
def bar_lists(draw: st.DrawFn) -> list[Bar]:
    count = draw(st.integers(min_value=0, max_value=20))
    steps = draw(st.lists(st.integers(1, 10_000), min_size=count, max_size=count))
    bars, time = [], START
    for step in steps:
        time += timedelta(minutes=step)
        open_, close = draw(prices), draw(prices)
        high = max(open_, close) + draw(st.floats(0, 10))
        low = min(open_, close) * draw(st.floats(0.5, 1))
        volume = draw(st.floats(0, 1e9))
        bars.append(Bar(time=time, open=open_, high=high, low=low, close=close, volume=volume))
    return bars


@given(bar_lists())
def test_bars_survive_a_round_trip_through_a_frame(bars: list[Bar]) -> None:
    assert frame_to_bars(bars_to_frame(bars)) == bars
