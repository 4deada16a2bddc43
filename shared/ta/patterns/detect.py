"""The entry point: validate one window of bars, run every pattern's detector, rank matches."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shared.errors import InvalidInput
from shared.ta.patterns import bases, channels, curves, flags, islands, swings
from shared.ta.patterns.geometry import BOTTOM, TOP, Bars, Detector, either_side, one_side
from shared.ta.patterns.model import PatternMatch, PatternName
from shared.ta.pivots import FloatArray, float_series

MIN_BARS = 20
"""Fewest bars accepted: fewer leave no room for the several swings a pattern is made of."""

PIVOT_BARS_PER_ORDER = 16
"""Window bars per unit of pivot order: swings must stand out over ~1/16 of the chart, as a
chartist's eye scales with the chart; 40 bars give order 2, 100 bars 6, capped to 5."""

PIVOT_ORDER_LIMITS = (2, 5)
"""Order 1 makes every wiggle a swing; above 5 a swing needs 11 bars and late ones vanish."""

PIVOT_PROMINENCE_ATR = 0.5
"""A swing must rise half an average bar range above the ground around it (topographic
prominence) to be more than noise."""


_DETECTORS: dict[PatternName, Detector] = {
    PatternName.INVERSE_HEAD_AND_SHOULDERS: swings.inverse_head_and_shoulders,
    PatternName.DOUBLE_BOTTOM: swings.double_bottom,
    PatternName.ROUNDED_BOTTOM: one_side(curves.rounded, BOTTOM),
    PatternName.HIDDEN_BASE: bases.hidden_base,
    PatternName.BULLISH_FLAG: one_side(flags.flag, BOTTOM),
    PatternName.BEARISH_FLAG: one_side(flags.flag, TOP),
    PatternName.ISLAND_REVERSAL: either_side(islands.island),
    PatternName.V_SHAPED_REVERSAL: either_side(curves.v_reversal),
    PatternName.ROUNDED_TOP: one_side(curves.rounded, TOP),
}
"""Pattern -> detector, for all but the channel patterns (``channels.channel_patterns``
reads those seven from one fit). Bottom-side detectors read tops through a mirrored ``View``."""


def _series(field: str, values: Sequence[float] | FloatArray) -> FloatArray:
    """One price series as a 1-D float array of finite positive numbers, or ``InvalidInput``."""
    array = float_series(field, values)
    bad = np.flatnonzero(~np.isfinite(array) | (array <= 0))
    if bad.size:
        raise InvalidInput(
            field,
            f"bar {bad[0]} is {array[bad[0]]}; prices must be finite and positive",
            fix="Drop or fill missing bars before detecting patterns.",
        )
    return array


def _window(
    open: Sequence[float] | FloatArray,
    high: Sequence[float] | FloatArray,
    low: Sequence[float] | FloatArray,
    close: Sequence[float] | FloatArray,
    pivot_order: int | None,
    pivot_prominence: float,
) -> Bars:
    """Validate the four series and the pivot settings into one ``Bars``."""
    named = (("open", open), ("high", high), ("low", low), ("close", close))
    series = {name: _series(name, values) for name, values in named}
    n = len(series["close"])
    for name, array in series.items():
        if len(array) != n:
            raise InvalidInput(
                name,
                f"has {len(array)} bars but close has {n}",
                fix="Pass open, high, low and close of the same bars.",
            )
    if n < MIN_BARS:
        raise InvalidInput(
            "close",
            f"has {n} bars; chart patterns need at least {MIN_BARS}",
            fix="Pass a longer window, e.g. the last 40 bars.",
        )
    inverted = np.flatnonzero(series["high"] < series["low"])
    if inverted.size:
        i = int(inverted[0])
        raise InvalidInput(
            "high",
            f"bar {i} has high {series['high'][i]} below low {series['low'][i]}",
            fix="Check the column order of the bars.",
        )
    if pivot_order is None:
        lowest, highest = PIVOT_ORDER_LIMITS
        order = min(max(n // PIVOT_BARS_PER_ORDER, lowest), highest)
    elif 1 <= pivot_order <= n // 4:
        order = pivot_order
    else:
        raise InvalidInput(
            "pivot_order",
            f"is {pivot_order}; it must be between 1 and a quarter of the {n} bars",
            fix="Leave it unset to scale it with the window.",
        )
    if not math.isfinite(pivot_prominence) or pivot_prominence < 0:
        raise InvalidInput("pivot_prominence", f"is {pivot_prominence}; it must be >= 0")
    return Bars(series["high"], series["low"], series["close"], order, pivot_prominence)


def detect_patterns(
    open: Sequence[float] | FloatArray,
    high: Sequence[float] | FloatArray,
    low: Sequence[float] | FloatArray,
    close: Sequence[float] | FloatArray,
    *,
    min_confidence: float = 0.0,
    pivot_order: int | None = None,
    pivot_prominence: float = PIVOT_PROMINENCE_ATR,
) -> list[PatternMatch]:
    """Every pattern seen in one window of bars, most confident first.

    At most one match per pattern name (its best reading), with confidence rounded to three
    places; matches below ``min_confidence`` are dropped. ``pivot_order`` is how many bars
    either side a swing must beat (default: scaled with the window) and ``pivot_prominence``
    how far, in average true ranges, it must stand out. Deterministic: the same bars always
    give the same list. Raises ``InvalidInput`` naming the offending field.
    """
    if not 0.0 <= min_confidence <= 1.0:
        raise InvalidInput("min_confidence", f"is {min_confidence}; it must be within [0, 1]")
    bars = _window(open, high, low, close, pivot_order, pivot_prominence)
    if bars.atr == 0:
        return []  # bars that never move draw no shape at all
    matches: list[PatternMatch] = []
    found = channels.channel_patterns(bars)
    found |= {name: detector(bars) for name, detector in _DETECTORS.items()}
    for name in PatternName:  # the names' order breaks ties, as it always has
        finding = found[name]
        if finding is None:
            continue
        confidence = round(finding.confidence, 3)
        if confidence > 0 and confidence >= min_confidence:
            matches.append(
                PatternMatch(
                    name=name,
                    bias=finding.bias,
                    confidence=confidence,
                    start_index=finding.start,
                    end_index=finding.end,
                    description=finding.description,
                )
            )
    return sorted(matches, key=lambda match: -match.confidence)
