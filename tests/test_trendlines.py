"""The closed-form trendlines against the iterative search they replace.

The oracle is ``bench.reference_trendlines``, a plain restatement of the original
step-halving search. For every window the closed-form lines must go through the
pivots the original picks, pass the original's own validity check, and have a
squared error no worse than the original's (they are usually slightly better,
because the search stops at a step of 1e-4 slope units).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import reference_trendlines as reference
from shared.errors import InvalidInput
from shared.market.sources import DATA_DIR
from shared.ta.trendlines import fit_trendlines_high_low, fit_trendlines_single

ERROR_RELATIVE = 1e-9
"""Slack on "our error <= the original's", relative to the original's error.

Both errors are sums of squares computed the same way, so rounding alone differs by
about n * eps (~1e-14). The one deliberate difference is the rounding allowance that
keeps our line a few ulps inside a binding bound; it costs at most ~1e-10 of the error
even on EURUSD, where the error is smallest relative to the prices. Observed worst
case on the real windows is ~1e-13; 1e-9 leaves room while still catching any real
regression (the original's own sub-optimality is typically 1e-6 or more).
"""

ERROR_ABSOLUTE = 1e-12
"""Further slack, times the squared magnitude of the series, for near-perfect fits.

When a series is (almost) a straight line both errors are rounding noise, around
(eps * magnitude)**2 * n, and a relative comparison between two noises is meaningless.
"""

SLOPE_UNITS = 1e-3
"""How far our slope may be from the original's, in the original's slope units.

The original's slope unit is (max - min) / n and it stops once its step is below 1e-4
units, ending within about 2.5e-4 units of the optimum; observed worst case is 1.2e-4.
"""

WINDOWS_PER_FILE = 200

_CSV_DIR = DATA_DIR

Line = tuple[float, float]
Fit = Callable[[], tuple[Line, Line]]


def _reference_pivots(close: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[int, int]:
    """The support and resistance pivots exactly as the original picks them."""
    x = np.arange(len(close))
    slope, intercept = np.polyfit(x, close, 1)
    line = slope * x + intercept
    return int((low - line).argmin()), int((high - line).argmax())


def _assert_like_reference(
    ours: tuple[Line, Line],
    close: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    reference_fit: Fit,
) -> None:
    """Check both lines against the original's pivots, validity check and error.

    Where the original cannot even start (both nudges from the OLS slope are invalid,
    which happens on tied pivots) our line is compared with the OLS-slope line through
    the same pivot instead: the only line the original would vouch for.
    """
    try:
        theirs: tuple[Line, Line] | None = reference_fit()
    except reference.SearchFailed:
        theirs = None
    ols_slope = float(np.polyfit(np.arange(len(close)), close, 1)[0])
    support_pivot, resistance_pivot = _reference_pivots(close, low, high)
    cases = ((True, low, support_pivot), (False, high, resistance_pivot))
    for index, (support, y, pivot) in enumerate(cases):
        slope, intercept = ours[index]
        magnitude = float(np.abs(y).max())
        # Through the original's pivot: up to rounding, not just within the tolerance.
        assert abs(slope * pivot + intercept - y[pivot]) <= 1e-12 * (
            magnitude + abs(slope) * len(y)
        )
        heights = slope * np.arange(len(y)) + intercept - y
        if support:
            assert heights.max() <= reference.TOLERANCE
        else:
            assert heights.min() >= -reference.TOLERANCE
        error = reference.line_error(support, pivot, slope, y)
        assert error >= 0, "the original's own check rejects our line"
        their_slope = ols_slope if theirs is None else theirs[index][0]
        their_error = reference.line_error(support, pivot, their_slope, y)
        assert error <= their_error * (1 + ERROR_RELATIVE) + ERROR_ABSOLUTE * magnitude**2
        slope_unit = float(y.max() - y.min()) / len(y)
        # A flat series gives the original a slope unit of 0: it cannot move off its start.
        if theirs is not None and slope_unit > 0:
            assert abs(slope - their_slope) <= SLOPE_UNITS * slope_unit + 1e-12 * magnitude


def _check_single(close: np.ndarray) -> None:
    ours = fit_trendlines_single(close)
    _assert_like_reference(
        ours, close, close, close, lambda: reference.fit_trendlines_single(close)
    )


def _check_high_low(high: np.ndarray, low: np.ndarray, close: np.ndarray) -> None:
    ours = fit_trendlines_high_low(high, low, close)
    _assert_like_reference(
        ours, close, low, high, lambda: reference.fit_trendlines_high_low(high, low, close)
    )


def _real_windows(name: str) -> list[pd.DataFrame]:
    """Seeded slices of 30-100 bars from one of the bundled real OHLCV files."""
    bars = pd.read_csv(_CSV_DIR / f"{name}.csv", index_col=0)
    rng = np.random.default_rng(sum(map(ord, name)))
    windows = []
    for _ in range(WINDOWS_PER_FILE):
        length = int(rng.integers(30, 101))
        start = int(rng.integers(0, len(bars) - length + 1))
        windows.append(bars.iloc[start : start + length])
    return windows


def _random_walk(rng: np.random.Generator) -> np.ndarray:
    """A random walk with random length, level, scale and drift, sometimes crossing zero."""
    length = int(rng.integers(2, 151))
    scale = 10.0 ** rng.uniform(-4, 5)
    steps = rng.normal(rng.normal(0, 0.2), 1.0, length) * scale
    level = rng.choice([0.0, 1.0, 100.0]) * scale * rng.uniform(1, 50)
    return level + np.cumsum(steps)


@pytest.mark.parametrize("name", ["GOOG", "EURUSD", "BTCUSD"])
def test_single_matches_reference_on_real_windows(name: str) -> None:
    for window in _real_windows(name):
        _check_single(window["Close"].to_numpy())


@pytest.mark.parametrize("name", ["GOOG", "EURUSD", "BTCUSD"])
def test_high_low_matches_reference_on_real_windows(name: str) -> None:
    for window in _real_windows(name):
        _check_high_low(
            window["High"].to_numpy(), window["Low"].to_numpy(), window["Close"].to_numpy()
        )


def test_single_matches_reference_on_random_walks() -> None:
    rng = np.random.default_rng(20240607)
    for _ in range(300):
        _check_single(_random_walk(rng))


def test_high_low_matches_reference_on_random_walks() -> None:
    rng = np.random.default_rng(20240608)
    for _ in range(300):
        close = _random_walk(rng)
        spread = np.abs(np.diff(close, prepend=close[0])).mean() + 1e-3
        high = close + rng.exponential(spread, close.size)
        low = close - rng.exponential(spread, close.size)
        _check_high_low(high, low, close)


# Prices with three decimals; hypothesis favours small values, so ties are common.
_prices = st.integers(-(10**9), 10**9).map(lambda v: v / 1000)


@settings(max_examples=300, deadline=None)
@given(st.lists(_prices, min_size=2, max_size=40))
def test_single_matches_reference_on_generated_series(close: list[float]) -> None:
    _check_single(np.array(close))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(_prices, st.integers(0, 10**6), st.integers(0, 10**6)), min_size=2, max_size=40
    )
)
def test_high_low_matches_reference_on_generated_bars(bars: list[tuple[float, int, int]]) -> None:
    close = np.array([c for c, _, _ in bars])
    high = close + np.array([up for _, up, _ in bars]) / 1000
    low = close - np.array([down for _, _, down in bars]) / 1000
    _check_high_low(high, low, close)


def test_tied_pivots_match_reference_and_give_the_flat_line() -> None:
    # Two bars tie for furthest below the OLS line and three for furthest above: which
    # one becomes the pivot is decided by rounding inside np.polyfit, and the original
    # cannot even start its search (both nudges from the OLS slope are invalid).
    close = np.array([3.0, -1.0, 3.0, -1.0, 3.0])
    _check_single(close)
    (support_slope, support_intercept), (resistance_slope, resistance_intercept) = (
        fit_trendlines_single(close)
    )
    assert support_slope == pytest.approx(0.0, abs=1e-5)
    assert support_intercept == pytest.approx(-1.0, abs=1e-5)
    assert resistance_slope == pytest.approx(0.0, abs=1e-5)
    assert resistance_intercept == pytest.approx(3.0, abs=1e-5)


@pytest.mark.parametrize(
    "close",
    [[5.0, 5.0, 5.0, 5.0], [1.0, 3.0, 5.0, 7.0, 9.0], [2.0, 7.5]],
    ids=["constant", "straight", "two-points"],
)
def test_straight_series_give_the_series_itself(close: list[float]) -> None:
    _check_single(np.array(close))
    slope = (close[-1] - close[0]) / (len(close) - 1)
    for line_slope, line_intercept in fit_trendlines_single(close):
        assert line_slope == pytest.approx(slope, abs=1e-9)
        assert line_intercept == pytest.approx(close[0], abs=1e-9)


def test_sequences_and_arrays_give_identical_results() -> None:
    rng = np.random.default_rng(7)
    close = 100 + np.cumsum(rng.normal(size=60))
    high, low = close + rng.uniform(0, 1, 60), close - rng.uniform(0, 1, 60)
    single = fit_trendlines_single(close)
    high_low = fit_trendlines_high_low(high, low, close)
    for convert in (list, tuple, pd.Series):
        assert fit_trendlines_single(convert(close)) == single
        assert fit_trendlines_high_low(convert(high), convert(low), convert(close)) == high_low


def test_results_are_plain_floats() -> None:
    close = np.array([1.0, 2.0, 1.5, 3.0, 2.5])
    results = (fit_trendlines_single(close), fit_trendlines_high_low(close + 1, close - 1, close))
    for support, resistance in results:
        assert all(type(value) is float for value in (*support, *resistance))


@pytest.mark.parametrize("close", [[], [1.0]], ids=["empty", "one-point"])
def test_fewer_than_two_points_are_rejected(close: list[float]) -> None:
    with pytest.raises(InvalidInput, match="at least 2") as single:
        fit_trendlines_single(close)
    assert single.value.field == "close"
    with pytest.raises(InvalidInput, match="at least 2") as high_low:
        fit_trendlines_high_low(close, close, close)
    assert high_low.value.field == "close"


@pytest.mark.parametrize("field", ["high", "low"])
@pytest.mark.parametrize("length", [4, 6])
def test_unequal_lengths_are_rejected(field: str, length: int) -> None:
    series = {"high": [2.0] * 5, "low": [1.0] * 5, "close": [1.5] * 5}
    series[field] = series[field][:1] * length
    with pytest.raises(InvalidInput, match=f"has {length} values but close has 5") as raised:
        fit_trendlines_high_low(**series)
    assert raised.value.field == field
    assert raised.value.fix


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("field", ["close", "high", "low"])
def test_non_finite_values_are_rejected_naming_the_field(field: str, bad: float) -> None:
    series = {"high": [2.0, 3.0, 2.5, 4.0], "low": [1.0, 2.0, 1.5, 3.0], "close": [1.5] * 4}
    series[field] = list(series[field])
    series[field][2] = bad
    with pytest.raises(InvalidInput, match="non-finite value .* at index 2") as raised:
        fit_trendlines_high_low(**series)
    assert raised.value.field == field
    if field == "close":
        with pytest.raises(InvalidInput, match="at index 2"):
            fit_trendlines_single(series["close"])


@pytest.mark.parametrize(
    ("close", "problem"),
    [(["a", "b"], "not a sequence of numbers"), ([[1.0, 2.0], [3.0, 4.0]], "one-dimensional")],
    ids=["text", "two-dimensional"],
)
def test_malformed_input_is_rejected(close: object, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem) as raised:
        fit_trendlines_single(close)  # type: ignore[arg-type]
    assert raised.value.field == "close"
