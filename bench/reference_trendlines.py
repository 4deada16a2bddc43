"""The iterative trendline search that ``shared.ta.trendlines`` replaces.

This is a plain restatement of the slope search from neurotrader888's
TechnicalAnalysisAutomation (``trendline_automation.py``). It is kept only as
the oracle for ``tests/test_trendlines.py`` and the baseline for
``bench/bench_trendlines.py``; production code must not import it.
"""

from __future__ import annotations

import numpy as np

TOLERANCE = 1e-5
"""How far a point may sit on the wrong side of a line before the line is invalid."""


class SearchFailed(ValueError):
    """The search could not start: no valid line next to the initial slope to step towards."""


def line_error(support: bool, pivot: int, slope: float, y: np.ndarray) -> float:
    """Sum of squared distances from the line to ``y``, or -1.0 if the line is invalid.

    The line passes through ``(pivot, y[pivot])``. A support line is invalid when
    any point lies more than ``TOLERANCE`` below it, a resistance line when any
    point lies more than ``TOLERANCE`` above it.
    """
    intercept = -slope * pivot + y[pivot]
    diffs = slope * np.arange(len(y)) + intercept - y
    if support and diffs.max() > TOLERANCE:
        return -1.0
    if not support and diffs.min() < -TOLERANCE:
        return -1.0
    return float((diffs**2).sum())


def optimize_slope(
    support: bool, pivot: int, init_slope: float, y: np.ndarray
) -> tuple[float, float]:
    """Descend from ``init_slope`` with a halving step until the step is below 1e-4 units.

    Returns ``(slope, intercept)`` of the best valid line through ``y[pivot]``.
    """
    slope_unit = (y.max() - y.min()) / len(y)
    min_step = 1e-4
    curr_step = 1.0
    best_slope = init_slope
    best_err = line_error(support, pivot, init_slope, y)
    if best_err < 0:
        raise SearchFailed("the initial slope does not give a valid line")
    get_derivative = True
    derivative = 0.0
    while curr_step > min_step:
        if get_derivative:
            test_err = line_error(support, pivot, best_slope + slope_unit * min_step, y)
            derivative = test_err - best_err
            if test_err < 0:
                test_err = line_error(support, pivot, best_slope - slope_unit * min_step, y)
                derivative = best_err - test_err
            if test_err < 0:
                raise SearchFailed("both nudged slopes give invalid lines")
            get_derivative = False
        if derivative > 0:
            test_slope = best_slope - slope_unit * curr_step
        else:
            test_slope = best_slope + slope_unit * curr_step
        test_err = line_error(support, pivot, test_slope, y)
        if test_err < 0 or test_err >= best_err:
            curr_step *= 0.5
        else:
            best_err = test_err
            best_slope = test_slope
            get_derivative = True
    return float(best_slope), float(-best_slope * pivot + y[pivot])


Line = tuple[float, float]


def fit_trendlines_single(close: np.ndarray) -> tuple[Line, Line]:
    """Support and resistance of ``close``, pivoting on the extreme OLS residuals."""
    x = np.arange(len(close))
    slope, intercept = np.polyfit(x, close, 1)
    residuals = close - (slope * x + intercept)
    support = optimize_slope(True, int(residuals.argmin()), slope, close)
    resistance = optimize_slope(False, int(residuals.argmax()), slope, close)
    return support, resistance


def fit_trendlines_high_low(
    high: np.ndarray, low: np.ndarray, close: np.ndarray
) -> tuple[Line, Line]:
    """Support on ``low`` and resistance on ``high``, pivoting off the OLS line of ``close``."""
    x = np.arange(len(close))
    slope, intercept = np.polyfit(x, close, 1)
    line = slope * x + intercept
    support = optimize_slope(True, int((low - line).argmin()), slope, low)
    resistance = optimize_slope(False, int((high - line).argmax()), slope, high)
    return support, resistance
