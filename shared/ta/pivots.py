"""Swing points, volatility units and least-squares lines: the geometry chart patterns share.

A chartist reads a pattern off the swing highs and lows of a chart and the lines drawn
through them, and judges "big" or "tight" against how far a bar usually travels. This
module gives those three things one definition, so every detector in
``shared.ta.patterns`` measures the chart the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import overload

import numpy as np
from numpy.typing import NDArray

from shared.errors import InvalidInput

FloatArray = NDArray[np.float64]


def float_series(field: str, values: Sequence[float] | FloatArray) -> FloatArray:
    """``values`` as a 1-D float array, or ``InvalidInput`` naming ``field`` (the checks every
    reader of a price series starts with; what else it requires is the reader's own)."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(field, f"is not a sequence of numbers ({exc})") from None
    if array.ndim != 1:
        raise InvalidInput(field, f"must be one-dimensional, got shape {array.shape}")
    return array


class PivotKind(StrEnum):
    """Whether a swing point is a local top or a local bottom."""

    HIGH = "high"
    LOW = "low"


@dataclass(frozen=True)
class Pivot:
    """One swing point: bar index, the price there (its high or its low) and its kind."""

    index: int
    price: float
    kind: PivotKind


@dataclass(frozen=True)
class FittedLine:
    """A straight line ``price = slope * index + intercept`` in bar-index coordinates."""

    slope: float
    intercept: float

    @overload
    def at(self, index: float) -> float: ...

    @overload
    def at(self, index: NDArray[np.integer] | FloatArray) -> FloatArray: ...

    def at(self, index: float | NDArray[np.integer] | FloatArray) -> float | FloatArray:
        """The line's price at a bar index (or at each of an array of indices)."""
        if isinstance(index, np.ndarray):
            return self.slope * index.astype(np.float64) + self.intercept
        return self.slope * index + self.intercept


def true_ranges(high: FloatArray, low: FloatArray, close: FloatArray) -> FloatArray:
    """Per-bar true range: high-low widened to the previous close, so gaps count as movement."""
    previous = np.concatenate(([close[0]], close[:-1]))
    return np.maximum(high, previous) - np.minimum(low, previous)


def find_pivots(
    high: FloatArray, low: FloatArray, *, order: int, min_prominence: float
) -> list[Pivot]:
    """Swing highs and lows in index order.

    A swing high is the highest high of the ``order`` bars on each side whose prominence
    is at least ``min_prominence`` (a price distance, typically a multiple of the average
    true range), so noise wiggles are not mistaken for swings. Prominence is the
    topographic one: how far highs fall on the shallower side before a higher high or the
    window's edge, so a rounded top is as prominent as a spiky one of the same height.
    Ties go to the first bar so a flat top yields one pivot, not several. Bars closer than
    ``order`` to either end are never pivots: a swing is only known once ``order`` later
    bars failed to exceed it, which is also all a trader sees at the right edge of a chart.
    Swing lows are the mirror image on the lows.
    """
    if order < 1:
        raise ValueError(f"order must be at least 1, got {order}")
    pivots: list[Pivot] = []
    for index in range(order, len(high) - order):
        for series, kind, sign in ((high, PivotKind.HIGH, 1.0), (low, PivotKind.LOW, -1.0)):
            oriented = sign * series
            value = oriented[index]
            left = oriented[index - order : index]
            right = oriented[index + 1 : index + order + 1]
            if value <= left.max() or value < right.max():
                continue
            if _prominence(oriented, index) >= min_prominence:
                pivots.append(Pivot(index=index, price=float(series[index]), kind=kind))
    return pivots


def _prominence(values: FloatArray, index: int) -> float:
    """Topographic prominence of the peak ``values[index]`` (as in ``scipy.signal``).

    On each side, walk out until a higher value or the edge and take the lowest value
    passed; the peak stands out by its height above the higher of those two lows.
    """
    peak = values[index]
    higher_left = np.flatnonzero(values[:index] > peak)
    higher_right = np.flatnonzero(values[index + 1 :] > peak)
    left_edge = higher_left[-1] + 1 if higher_left.size else 0
    right_edge = index + 1 + higher_right[0] if higher_right.size else len(values)
    left_low = values[left_edge : index + 1].min()
    right_low = values[index:right_edge].min()
    return float(peak - max(left_low, right_low))


def fit_line(points: list[Pivot]) -> FittedLine:
    """Least-squares line through pivots: the trendline a chartist would draw through them.

    Least squares rather than joining two extremes, so one stray swing bends the line
    a little instead of defining it. Needs at least two pivots at distinct bars.
    """
    if len({p.index for p in points}) < 2:
        raise ValueError("a line needs at least two pivots at distinct bars")
    x = np.array([p.index for p in points], dtype=float)
    y = np.array([p.price for p in points], dtype=float)
    slope, intercept = np.polyfit(x, y, 1)
    return FittedLine(slope=float(slope), intercept=float(intercept))
