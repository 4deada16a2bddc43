"""Support and resistance trendlines fitted in closed form.

The method comes from neurotrader888's TechnicalAnalysisAutomation
(``trendline_automation.py``): fit an OLS line to the closes, take the bar
furthest below it as the support pivot and the bar furthest above it as the
resistance pivot, then choose, among the lines through each pivot that no bar
crosses (by more than 1e-5), the one with the least sum of squared distances
to the bars. That project finds the slope with an iterative step-halving search.

This module reaches the same optimum directly. For a fixed pivot ``p`` the line
is ``y[p] + m * (i - p)``, so every other bar bounds the slope ``m`` linearly:
from one side if it lies right of the pivot, from the other if it lies left.
The valid slopes are therefore an interval, the squared error is a convex
quadratic in ``m``, and the constrained optimum is the unconstrained minimiser
clipped to the interval. That is a few vectorised passes over the window
instead of dozens, and exact instead of stopping at a step of 1e-4 slope units.
On windows of tens of bars numpy's per-call overhead dominates, so the code
keeps the number of array operations small (shared sums, cached grids).

Bars are at x = 0 .. n-1. A line is returned as ``(slope, intercept)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from shared.errors import InvalidInput
from shared.ta.pivots import float_series

__all__ = ["fit_trendlines_high_low", "fit_trendlines_single"]

_Line = tuple[float, float]
"""``(slope, intercept)`` of ``y = slope * x + intercept`` with x the bar index."""

_Series = Sequence[float] | np.ndarray

_TOLERANCE = 1e-5
"""How far a bar may sit on the wrong side of a valid line: the original's tolerance,
so that our lines pass its check and may use the same slack."""

_ROUNDING_ALLOWANCE = 8.0 * float(np.finfo(float).eps)
"""Rounding in computing a slope bound and in the original's validity check of the
resulting line, relative to the largest magnitude involved (a generous 16 half-ulps)."""

_TIE_RELATIVE = 1e-9
"""Residuals closer than this, relative to the series' magnitude, count as tied for the
pivot: far wider than the disagreement between our OLS and ``np.polyfit``, far narrower
than the gaps real prices produce."""

_MIN_POINTS = 2
"""One bar besides the pivot is needed to say anything about the slope."""


def fit_trendlines_single(close: _Series) -> tuple[_Line, _Line]:
    """Support and resistance lines of one series, both fitted on ``close``.

    Returns ``(support, resistance)``, each ``(slope, intercept)`` as floats.
    Raises ``InvalidInput`` for fewer than two values or non-finite values.
    """
    y, lowest, highest = _as_series("close", close)
    return _fit(y, y, y, lowest, highest)


def fit_trendlines_high_low(high: _Series, low: _Series, close: _Series) -> tuple[_Line, _Line]:
    """Support fitted on ``low`` and resistance on ``high``, pivoting off the OLS line of ``close``.

    Fitting on the wicks gives lines that no part of a bar crosses. Returns
    ``(support, resistance)``, each ``(slope, intercept)`` as floats. Raises
    ``InvalidInput`` for unequal lengths, fewer than two values or non-finite values.
    """
    close_y, close_lowest, close_highest = _as_series("close", close)
    high_y, high_lowest, high_highest = _as_series("high", high)
    low_y, low_lowest, low_highest = _as_series("low", low)
    for field, series in (("high", high_y), ("low", low_y)):
        if series.size != close_y.size:
            raise InvalidInput(
                field,
                f"has {series.size} values but close has {close_y.size}",
                fix="Pass high, low and close for the same bars.",
            )
    return _fit(
        close_y,
        low_y,
        high_y,
        min(close_lowest, high_lowest, low_lowest),
        max(close_highest, high_highest, low_highest),
    )


def _as_series(field: str, values: _Series) -> tuple[np.ndarray, float, float]:
    """``values`` as a 1-D float array, with its minimum and maximum.

    Rejects what no line can be fitted to, naming ``field`` in the error.
    """
    y = float_series(field, values)
    if y.size < _MIN_POINTS:
        raise InvalidInput(
            field,
            f"has {y.size} value(s); a trendline needs at least {_MIN_POINTS}",
            fix="Pass a longer window of bars.",
        )
    # argmin and argmax stop at a NaN and find any infinity, so the extremes double as the
    # finiteness check.
    lowest, highest = _least(y), _greatest(y)
    if not math.isfinite(highest - lowest):
        bad = int(np.argmin(np.isfinite(y)))
        raise InvalidInput(
            field,
            f"has a non-finite value ({y[bad]}) at index {bad}",
            fix="Drop or fill missing bars before fitting trendlines.",
        )
    return y, lowest, highest


def _fit(
    close: np.ndarray, low: np.ndarray, high: np.ndarray, lowest: float, highest: float
) -> tuple[_Line, _Line]:
    """Support on ``low`` and resistance on ``high``, pivoting off the OLS line of ``close``.

    ``lowest`` and ``highest`` are the extremes over all three series. Passing the
    same array more than once (as the single-series fit does) reuses its sums.
    """
    design, reciprocals = _grid(close.size)
    extent = max(abs(lowest), abs(highest))
    tolerance = _usable_tolerance(extent, highest - lowest)
    close_moments = _moments(design, close)
    support_pivot, resistance_pivot = _pivots(design, close, low, high, close_moments, extent)

    def fit(y: np.ndarray, pivot: int, *, support: bool) -> _Line:
        moments = close_moments if y is close else _moments(design, y)
        return _fit_line(y, moments, pivot, tolerance, reciprocals, support=support)

    return fit(low, support_pivot, support=True), fit(high, resistance_pivot, support=False)


@lru_cache(maxsize=64)
def _grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``1`` and ``0 .. n-1`` (the OLS design matrix), and ``1/1 .. 1/(n-1)``; read-only.

    Cached because callers fit many windows of the same length, and building these
    costs as much as a step of the fit itself.
    """
    design = np.vstack([np.ones(n), np.arange(n, dtype=float)])
    reciprocals = 1.0 / design[1, 1:]
    design.setflags(write=False)
    reciprocals.setflags(write=False)
    return design, reciprocals


def _moments(design: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """``(sum(y[i]), sum(i * y[i]))``: all that the slope formulas need from ``y``."""
    total, weighted_sum = design.dot(y).tolist()
    return total, weighted_sum


def _least(values: np.ndarray) -> float:
    """The minimum of a non-empty array (indexing at argmin beats ``min`` on short arrays)."""
    return float(values[values.argmin()])


def _greatest(values: np.ndarray) -> float:
    """The maximum of a non-empty array (indexing at argmax beats ``max`` on short arrays)."""
    return float(values[values.argmax()])


def _usable_tolerance(extent: float, span: float) -> float:
    """The validity tolerance less the rounding the original's check may add.

    The original checks validity in its own floating-point arithmetic, so a slope
    exactly on a bound could fail it by a few ulps. Rounding scales with the values
    and with ``|slope| * n``; the slope always lies between the OLS slope and the
    unconstrained minimiser, and by Cauchy-Schwarz both are at most ``4 * span / n``
    in magnitude, so the magnitudes involved are below ``extent + 8 * span`` (largest
    absolute value plus eight times the range). The allowance moves a line far less
    than the original's own resolution, and stays below the tolerance for values up to
    about 1e9 in magnitude.
    """
    return _TOLERANCE - _ROUNDING_ALLOWANCE * (extent + 8.0 * span)


def _pivots(
    design: np.ndarray,
    close: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    close_moments: tuple[float, float],
    extent: float,
) -> tuple[int, int]:
    """The bar of ``low`` furthest below, and of ``high`` furthest above, the OLS line of ``close``.

    The OLS slope comes from the closed-form normal equations, several times cheaper than
    ``np.polyfit``; the intercept does not change which bar is furthest, so it is left
    out. When an extreme is tied the two pick different bars by rounding alone, so ties
    are resolved with ``np.polyfit`` to pick the same bar as the original.
    """
    x = design[1]
    n = x.size
    total, weighted_sum = close_moments
    trend = (weighted_sum - total * (n - 1) / 2) / (n * (n * n - 1) / 12)
    below = low - trend * x
    above = below if high is low else high - trend * x
    support_pivot, resistance_pivot = int(below.argmin()), int(above.argmax())
    margin = _TIE_RELATIVE * (extent + abs(trend) * n)
    tied = np.count_nonzero(below <= float(below[support_pivot]) + margin) > 1 or (
        np.count_nonzero(above >= float(above[resistance_pivot]) - margin) > 1
    )
    if tied:
        slope, intercept = np.polyfit(x, close, 1)
        line = slope * x + intercept
        support_pivot, resistance_pivot = int((low - line).argmin()), int((high - line).argmax())
    return support_pivot, resistance_pivot


def _fit_line(
    y: np.ndarray,
    moments: tuple[float, float],
    pivot: int,
    tolerance: float,
    reciprocals: np.ndarray,
    *,
    support: bool,
) -> _Line:
    """The least-squares line through ``(pivot, y[pivot])`` that no point of ``y`` crosses.

    With ``a = i - pivot`` the line sits ``m * a - (y[i] - y[pivot])`` above bar ``i``.
    A support line keeps that at most ``tol``: ``m * a <= s`` with
    ``s = y[i] - (y[pivot] - tol)``, so ``m <= s / a`` right of the pivot and
    ``m >= s / a`` left of it. A resistance line keeps it at least ``-tol``: ``m * a >= s``
    with ``s = y[i] - (y[pivot] + tol)``, the same bounds with the sides swapped. The
    squared error is least at ``m = sum(a * (y - y[pivot])) / sum(a * a)``, and both sums
    follow from ``moments`` in closed form.
    """
    n = y.size
    total, weighted_sum = moments
    level = float(y[pivot])
    sum_offsets = n * (n - 1) / 2 - n * pivot
    sum_squares = (n - 1) * n * (2 * n - 1) / 6 - pivot * n * (n - 1) + n * pivot * pivot
    slope = (weighted_sum - pivot * total - level * sum_offsets) / sum_squares
    shifted = y - (level - tolerance if support else level + tolerance)
    if pivot < n - 1:  # bars right of the pivot: bound s / a
        right = shifted[pivot + 1 :] * reciprocals[: n - 1 - pivot]
        slope = min(slope, _least(right)) if support else max(slope, _greatest(right))
    if pivot > 0:  # bars left of the pivot: bound s / a = -(s / (pivot - i))
        left = shifted[:pivot] * reciprocals[pivot - 1 :: -1]
        slope = max(slope, -_least(left)) if support else min(slope, -_greatest(left))
    return slope, -slope * pivot + level
