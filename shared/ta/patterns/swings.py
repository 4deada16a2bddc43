"""Reversals drawn on swing lows: the double bottom and the inverse head and shoulders."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations

import numpy as np

from shared.ta.patterns.geometry import Bars, Bounds, Finding, best, finding, ramp
from shared.ta.patterns.model import Bias
from shared.ta.pivots import Pivot, PivotKind

REVERSAL_HEIGHT_ATR: Bounds = (2.0, 4.0)
"""Neckline above the lows in ATRs: a smaller bounce is noise, not a reversal structure."""

BOTTOMS_SIMILAR: Bounds = (0.25, 0.1)
"""Gap between the two bottoms (or shoulders) per pattern height: a tenth is "equal"."""

BOTTOMS_SEPARATION: Bounds = (0.1, 0.2)
"""Bars between the two bottoms per window: adjacent dips are one bottom, not two."""

DEEPER_LOW_BETWEEN: Bounds = (-0.1, 0.0)
"""Lowest low between the bottoms, above their floor per height: a deeper dip is a head."""

PRIOR_DECLINE: Bounds = (0.3, 0.8)
"""Decline into the first low per pattern height: a reversal needs something to reverse."""

RECOVERY: Bounds = (0.4, 0.9)
"""Rise from the last low toward the neckline, as a share of the way: the turn has begun."""

NO_RETEST: Bounds = (0.0, 0.25)
"""Lows after the halfway recovery, above the floor per height: a third test makes a range."""

HEAD_BELOW_SHOULDERS: Bounds = (0.1, 0.25)
"""How much deeper the head goes than the deeper shoulder, per pattern height."""

SHOULDERS_BELOW_NECK: Bounds = (0.3, 0.5)
"""Shoulder depth below the neckline per height: shallow shoulders are just noise."""

NECKLINE_TILT: Bounds = (0.4, 0.15)
"""Difference of the two neckline peaks per height: the neckline is roughly level."""

SHOULDER_TIMING: Bounds = (0.4, 0.7)
"""Shorter over longer of the two shoulder-to-head durations: roughly symmetric in time."""


def _swing_lows(bars: Bars, count: int) -> Iterator[tuple[Pivot, ...]]:
    """Every ``count`` swing lows of the window, in time order, earliest first."""
    return combinations(bars.swings(PivotKind.LOW), count)


def _versus(difference: float, bars: Bars) -> str:
    """``2.1% above`` or ``2.1% below``."""
    return f"{bars.pct(difference)} {'above' if difference >= 0 else 'below'}"


def _aftermath(bars: Bars, last: Pivot, neck: float, floor: float) -> tuple[float, float]:
    """Scores of what followed the last low: recovery toward the neckline, and no retest.

    Once price has come halfway back to the neckline, a return to the floor makes the lows
    a range (a rectangle or triple bottom), not a reversal, so those later lows must stay
    clear of the floor.
    """
    height = neck - floor
    closes = bars.close[last.index :]
    recovered = (closes.max() - last.price) / (neck - last.price)
    halfway = np.flatnonzero(closes >= (last.price + neck) / 2)
    later_lows = bars.low[last.index + halfway[0] :] if halfway.size else None
    retest = 1.0 if later_lows is None else ramp((later_lows.min() - floor) / height, NO_RETEST)
    return ramp(recovered, RECOVERY), retest


def _prior_decline(bars: Bars, first: Pivot, height: float) -> float:
    """Score of the fall into the first low, per pattern height."""
    before = bars.high[: first.index]
    return ramp((before.max() - first.price) / height, PRIOR_DECLINE)


def _double_bottom_at(bars: Bars, first: Pivot, second: Pivot) -> Finding | None:
    """Two swing lows of similar depth with a clear peak, and nothing deeper, between them."""
    peak_index = first.index + 1 + int(bars.high[first.index + 1 : second.index].argmax())
    peak = float(bars.high[peak_index])
    floor = min(first.price, second.price)
    height = peak - floor
    if height <= 0:
        return None
    inner = bars.low[first.index + 1 : second.index]
    difference = abs(first.price - second.price)
    recovery, no_retest = _aftermath(bars, second, peak, floor)
    scores = (
        ramp(height / bars.atr, REVERSAL_HEIGHT_ATR),
        ramp(difference / height, BOTTOMS_SIMILAR),
        ramp((second.index - first.index) / bars.n, BOTTOMS_SEPARATION),
        ramp((inner.min() - floor) / height, DEEPER_LOW_BETWEEN),
        _prior_decline(bars, first, height),
        recovery,
        no_retest,
    )
    return finding(
        Bias.BULLISH,
        scores,
        first.index,
        bars.n - 1,
        lambda: (
            f"Swing lows at bars {first.index} and {second.index} differ by "
            f"{bars.pct(difference)} ({difference / height:.0%} of the {bars.pct(height)} "
            f"rally to bar {peak_index} between them), after a "
            f"{bars.pct(bars.high[: first.index].max() - first.price)} decline into the first; "
            f"the last close is {_versus(bars.close[-1] - second.price, bars)} the second low."
        ),
    )


def double_bottom(bars: Bars) -> Finding | None:
    """The best pair of swing lows forming a double bottom."""
    return best(_double_bottom_at(bars, *lows) for lows in _swing_lows(bars, 2))


def _head_and_shoulders_at(bars: Bars, left: Pivot, head: Pivot, right: Pivot) -> Finding | None:
    """Three swing lows, the middle one lowest and the two around it alike."""
    if head.price > bars.low[left.index : right.index + 1].min():
        return None
    peaks = (
        bars.high[left.index + 1 : head.index].max(),
        bars.high[head.index + 1 : right.index].max(),
    )
    neck = float(np.mean(peaks))
    height = neck - head.price
    shoulders = (left.price, right.price)
    if height <= 0 or max(shoulders) >= neck:
        return None
    timing = (head.index - left.index) / (right.index - head.index)
    recovery, no_retest = _aftermath(bars, right, neck, head.price)
    scores = (
        ramp(height / bars.atr, REVERSAL_HEIGHT_ATR),
        ramp((min(shoulders) - head.price) / height, HEAD_BELOW_SHOULDERS),
        ramp(abs(left.price - right.price) / height, BOTTOMS_SIMILAR),
        ramp((neck - max(shoulders)) / height, SHOULDERS_BELOW_NECK),
        ramp(abs(peaks[0] - peaks[1]) / height, NECKLINE_TILT),
        ramp(min(timing, 1 / timing), SHOULDER_TIMING),
        _prior_decline(bars, left, height),
        recovery,
        no_retest,
    )
    return finding(
        Bias.BULLISH,
        scores,
        left.index,
        bars.n - 1,
        lambda: (
            f"Swing lows at bars {left.index}, {head.index} and {right.index}: the head is "
            f"{bars.pct(min(shoulders) - head.price)} below the deeper shoulder, the shoulders "
            f"differ by {bars.pct(left.price - right.price)}, the neckline peaks differ by "
            f"{bars.pct(peaks[0] - peaks[1])} and stand {bars.pct(height)} above the head, "
            f"and the last close is {_versus(bars.close[-1] - right.price, bars)} the "
            f"right shoulder."
        ),
    )


def inverse_head_and_shoulders(bars: Bars) -> Finding | None:
    """The best triple of swing lows forming an inverse head and shoulders."""
    return best(_head_and_shoulders_at(bars, *lows) for lows in _swing_lows(bars, 3))
