"""Geometric detectors for the 16 classical chart patterns QuantAgent's vision agent looks for.

QuantAgent shows its pattern agent a candlestick chart of the last bars and asks which of
sixteen textbook patterns it sees. Without a vision model these detectors are that agent's
eyes: each measures one window with the swing points, trendlines, curve fits and gaps a
chartist would draw, and says in one sentence of numbers why it saw its pattern, so the
offline engine reasons from facts rather than from a picture.

Every threshold is relative: to the average true range (ATR), to the pattern's own height
or to the mean price, so the same numbers serve a 20- or a 100-bar window and a $5 or a
$5000 asset. Confidence is the product of soft scores in [0, 1], one per
textbook criterion, so a shape must meet all of them to score high, and one that fails a
criterion outright is not reported at all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.errors import InvalidInput
from shared.ta.pivots import (
    FittedLine,
    FloatArray,
    Pivot,
    PivotKind,
    find_pivots,
    fit_line,
    true_ranges,
)


class PatternName(StrEnum):
    """The sixteen patterns, spelled exactly as QuantAgent's pattern prompt names them."""

    INVERSE_HEAD_AND_SHOULDERS = "Inverse Head and Shoulders"
    DOUBLE_BOTTOM = "Double Bottom"
    ROUNDED_BOTTOM = "Rounded Bottom"
    HIDDEN_BASE = "Hidden Base"
    FALLING_WEDGE = "Falling Wedge"
    RISING_WEDGE = "Rising Wedge"
    ASCENDING_TRIANGLE = "Ascending Triangle"
    DESCENDING_TRIANGLE = "Descending Triangle"
    BULLISH_FLAG = "Bullish Flag"
    BEARISH_FLAG = "Bearish Flag"
    RECTANGLE = "Rectangle"
    ISLAND_REVERSAL = "Island Reversal"
    V_SHAPED_REVERSAL = "V-shaped Reversal"
    ROUNDED_TOP = "Rounded Top"
    EXPANDING_TRIANGLE = "Expanding Triangle"
    SYMMETRICAL_TRIANGLE = "Symmetrical Triangle"


class Bias(StrEnum):
    """Which way a pattern points; the values match ``shared.agents.schemas.Stance``."""

    BULLISH = "bullish"
    BEARISH = "bearish"
    NEUTRAL = "neutral"


class PatternMatch(BaseModel):
    """One detected pattern: what, which way, how sure, where, and the numbers behind it."""

    model_config = ConfigDict(frozen=True)

    name: PatternName
    bias: Bias
    confidence: float = Field(ge=0, le=1, description="product of the per-criterion scores")
    start_index: int = Field(ge=0, description="first bar of the pattern; 0 = window's first")
    end_index: int = Field(ge=0, description="last bar of the pattern, inclusive")
    description: str = Field(min_length=1, description="one sentence of the measured evidence")

    @model_validator(mode="after")
    def _span_is_ordered(self) -> PatternMatch:
        if self.end_index < self.start_index:
            raise ValueError(f"end_index {self.end_index} is before start_index {self.start_index}")
        return self


Bounds = tuple[float, float]
"""``(zero, one)`` of a soft threshold: the score is 0 at ``zero`` and 1 at ``one``."""

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

# Channel patterns: triangles, wedges, rectangle, expanding triangle.
CHANNEL_MIN_SPAN = 0.4
"""A channel pattern must cover 40% of the window: smaller ones are details, not the chart."""

CHANNEL_TOUCHES: Bounds = (3, 5)
"""Swing points on the two lines: 2+2 is the least that draws them, 5 reversals is textbook."""

CHANNEL_RESIDUAL: Bounds = (0.15, 0.05)
"""RMS distance of the swings from their lines, per pattern height: the touches must line up."""

CHANNEL_TOLERANCE = 0.1
"""Bars may poke past a line by 10% of the pattern height before they count as outside."""

CHANNEL_CONTAINMENT: Bounds = (0.75, 0.95)
"""Share of bars between the lines: a pattern that price keeps leaving is no pattern."""

CHANNEL_HEIGHT_ATR: Bounds = (1.0, 2.5)
"""Pattern height in ATRs: lines closer than ~2 bar ranges only frame noise."""

SLOPED_CHANGE: Bounds = (0.1, 0.3)
"""A line's rise or fall over the span, per pattern height, to count as sloped."""

FLAT_CHANGE: Bounds = (0.3, 0.1)
"""The same measure for a flat line: the mirror of ``SLOPED_CHANGE`` so the two blend."""

CONVERGING_RATIO: Bounds = (0.85, 0.6)
"""End width over start width: a triangle or wedge visibly narrows. Lines through wicks
keep about a bar range apart even at the apex, so 40% narrower already counts as full."""

PARALLEL_LOG_RATIO: Bounds = (0.4, 0.15)
"""|log| of the width ratio for parallel lines: within ~15% of each other keeps a box."""

# Double bottom and inverse head and shoulders.
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

# Rounded bottom / top and V-shaped reversal.
ROUNDED_STARTS = (0.0, 0.2, 0.4)
"""Spans tried for a bowl, as the share of the window skipped: bowls end at the last bar."""

ROUNDED_VERTEX: Bounds = (0.6, 0.35)
"""|Vertex| of the parabola on a [-1, 1] span: the low must sit near the middle."""

ROUNDED_DEPTH_ATR: Bounds = (2.0, 4.0)
"""Depth of the bowl below its shallower rim, in ATRs: a shallow curve is a flat line."""

ROUNDED_R2: Bounds = (0.6, 0.85)
"""R² of the quadratic fit of closes: the curve must explain most of the movement."""

ROUNDED_VS_VEE: Bounds = (0.85, 1.05)
"""Best two-line residual over parabola residual: a bowl is fitted better by the curve than
by any V or any drop-then-flat corner."""

V_POSITION: tuple[Bounds, Bounds] = ((0.2, 0.35), (0.97, 0.85))
"""Where the low sits in the window: middle to late, with room for a recovery after it."""

V_LEG_ATR: Bounds = (2.5, 5.0)
"""Size of the shorter leg in ATRs: a V is a big move, not a wiggle."""

V_RECOVERY: tuple[Bounds, Bounds] = ((0.5, 0.8), (2.0, 1.4))
"""Recovery over drop: similar magnitude, neither a half-hearted bounce nor a new trend."""

V_VS_ROUNDED: Bounds = (0.9, 0.6)
"""Two-line residual over parabola residual: a V is fitted clearly better by two lines."""

V_LEG_R2: Bounds = (0.7, 0.9)
"""R² of the two straight legs: the drop and recovery are steady, not choppy."""

# Hidden base.
BASE_MIN_SHARE = 0.3
"""A base must fill at least 30% of the window: "long" consolidation, not a pause."""

BASE_DECLINE_MIN_BARS = 3
"""Bars before the base: a decline, and a "before" to compare bar ranges with, needs a few."""

BASE_LENGTH: Bounds = (0.25, 0.4)
"""Base length per window, scored: longer bases are more convincing."""

BASE_TIGHTNESS: Bounds = (0.4, 0.2)
"""Base high-low range over the decline before it: the base is narrow relative to the fall."""

BASE_CALM: Bounds = (0.9, 0.6)
"""Mean bar range in the base over that before it: volatility has dried up."""

BASE_NEAR_LOWS: Bounds = (0.4, 0.25)
"""Middle of the base within the window's high-low range: it sits near the lows."""

BASE_DRIFT: Bounds = (0.8, 0.4)
"""Trend of closes across the base per base range: the base is flat, not a channel."""

BASE_DECLINE_ATR: Bounds = (4.0, 8.0)
"""Decline before the base in ATRs: a base follows a real fall."""

# Flags.
FLAG_MIN_BARS = 4
"""A flag needs at least 4 bars to show a channel rather than a pause."""

FLAG_MAX_SHARE = 0.4
"""A flag is brief next to the chart: at most 40% of the window."""

POLE_MAX_SHARE = 0.25
"""The pole is a burst: at most a quarter of the window."""

POLE_SIZE: Bounds = (4.0, 7.0)
"""Pole height in median bar ranges (median, because the pole's own bars are large)."""

POLE_SIGNIFICANCE: Bounds = (2.5, 4.0)
"""Pole height over (median bar range x sqrt(pole bars)): a random walk's largest burst
scores about 2, a pole stands well above it. The square root keeps it resolution-free, and
the pole starts where this is largest, so flat bars before the burst are not counted in."""

FLAG_RETRACE: Bounds = (0.65, 0.4)
"""Deepest pullback of the flag as a share of the pole: flags give back less than half."""

FLAG_OVERSHOOT: Bounds = (0.2, 0.05)
"""How far the flag exceeds the pole's end, per pole: beyond that the pole is still going."""

FLAG_TIGHTNESS: Bounds = (0.15, 0.07)
"""RMS of flag closes around their trend, per pole: the flag is a narrow channel."""

FLAG_WITH_POLE: Bounds = (0.15, 0.03)
"""Flag drift in the pole's direction, per pole: flags are flat or lean against the pole."""

FLAG_AGAINST_POLE: Bounds = (-0.8, -0.5)
"""Flag drift against the pole, per pole (negative): more than that is a reversal."""

# Island reversal.
ISLAND_MAX_SHARE = 0.25
"""An island is a short cluster: at most a quarter of the window between the two gaps."""

ISLAND_GAP_ATR: Bounds = (0.0, 0.3)
"""The smaller gap in ATRs: any true gap counts, a third of a bar range is a clear one."""


@dataclass(frozen=True)
class _Finding:
    """A detector's answer before it is named: bias, score, span and evidence."""

    bias: Bias
    confidence: float
    start: int
    end: int
    description: str


@dataclass(frozen=True)
class _Side:
    """Bias and wording of one orientation, so a bottom detector also reads a mirrored top."""

    sign: float
    bias: Bias
    fell: str
    rose: str
    decline: str
    rally: str
    lowest: str
    below: str
    gap_down: str
    gap_up: str


_BOTTOM = _Side(
    sign=1.0,
    bias=Bias.BULLISH,
    fell="fell",
    rose="rose",
    decline="decline",
    rally="rally",
    lowest="lowest",
    below="below",
    gap_down="gap down",
    gap_up="gap up",
)
_TOP = _Side(
    sign=-1.0,
    bias=Bias.BEARISH,
    fell="rose",
    rose="fell",
    decline="rally",
    rally="decline",
    lowest="highest",
    below="above",
    gap_down="gap up",
    gap_up="gap down",
)


@dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class _Fit:
    """A least-squares fit of closes: coefficients, residual RMS and R²."""

    coef: FloatArray
    rms: float
    r2: float


@dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class _Bars:
    """One validated window plus the geometry every detector shares, computed once.

    Opens are validated but not kept: every pattern here is drawn on highs, lows and closes,
    and gaps are judged on highs and lows as chartists do.
    """

    high: FloatArray
    low: FloatArray
    close: FloatArray
    pivot_order: int
    pivot_prominence: float

    @property
    def n(self) -> int:
        """Number of bars."""
        return len(self.close)

    @cached_property
    def level(self) -> float:
        """Mean close: the price that percentages are quoted against."""
        return float(self.close.mean())

    @cached_property
    def ranges(self) -> FloatArray:
        """True range of each bar."""
        return true_ranges(self.high, self.low, self.close)

    @cached_property
    def atr(self) -> float:
        """Mean true range: the unit of "big" and "small" for this window."""
        return float(self.ranges.mean())

    @cached_property
    def pivots(self) -> tuple[Pivot, ...]:
        """Swing highs and lows of the window."""
        prominence = self.pivot_prominence * self.atr
        found = find_pivots(self.high, self.low, order=self.pivot_order, min_prominence=prominence)
        return tuple(found)

    @cached_property
    def channels(self) -> tuple[_Channel, ...]:
        """Trendline pairs from each early-enough swing to the last bar, longest first."""
        latest_start = self.n - math.ceil(CHANNEL_MIN_SPAN * self.n)
        starts = sorted({p.index for p in self.pivots if p.index <= latest_start})
        fitted = (_Channel.fit(self, start) for start in starts)
        return tuple(channel for channel in fitted if channel is not None)

    def swings(self, kind: PivotKind, start: int = 0) -> list[Pivot]:
        """The pivots of one kind at or after bar ``start``."""
        return [p for p in self.pivots if p.kind is kind and p.index >= start]

    def pct(self, distance: float) -> str:
        """A price distance as a percentage of the mean price, e.g. ``4.2%``."""
        return f"{100 * abs(distance) / self.level:.1f}%"


@dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class _View:
    """The bars seen from one side: a top is a bottom of the negated prices.

    Negating prices turns highs into lows, so the top-side high is minus the low. Detectors
    written for bottoms then find tops unchanged; distances keep their size, so ``bars.pct``
    still quotes them against the real mean price.
    """

    bars: _Bars
    side: _Side
    high: FloatArray
    low: FloatArray
    close: FloatArray

    @classmethod
    def of(cls, bars: _Bars, side: _Side) -> _View:
        """The view of ``bars`` from ``side``."""
        if side.sign > 0:
            return cls(bars, side, bars.high, bars.low, bars.close)
        return cls(bars, side, -bars.low, -bars.high, -bars.close)


_Detector = Callable[[_Bars], _Finding | None]


def _ramp(value: float, bounds: Bounds) -> float:
    """A soft threshold: 0 at ``bounds[0]``, 1 at ``bounds[1]``, linear between, clipped.

    Soft rather than hard so a shape just past a textbook limit loses confidence gradually
    instead of vanishing; bounds may run downwards for "smaller is better".
    """
    zero, one = bounds
    return float(np.clip((value - zero) / (one - zero), 0.0, 1.0))


def _finding(
    bias: Bias, scores: Iterable[float], start: int, end: int, describe: Callable[[], str]
) -> _Finding | None:
    """A finding whose confidence is the product of ``scores``, or None if any score is 0.

    The product makes every criterion necessary; ``describe`` is only called for survivors.
    """
    confidence = math.prod(scores)
    if confidence <= 0:
        return None
    return _Finding(bias, confidence, start, end, describe())


def _best(findings: Iterable[_Finding | None]) -> _Finding | None:
    """The most confident finding; the first one wins ties (longest span, earliest side)."""
    best: _Finding | None = None
    for finding in findings:
        if finding is not None and (best is None or finding.confidence > best.confidence):
            best = finding
    return best


def _least_squares(design: FloatArray, y: FloatArray) -> _Fit:
    """Least-squares fit of ``y`` on the columns of ``design``, with its RMS and R²."""
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    spread = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual**2).sum()) / spread if spread > 0 else 0.0
    return _Fit(coef=np.asarray(coef, dtype=float), rms=float(np.sqrt((residual**2).mean())), r2=r2)


def _quadratic(y: FloatArray) -> _Fit:
    """Parabola ``a t² + b t + c`` over ``t`` in [-1, 1], so ``a`` is the rim-to-vertex height."""
    t = np.linspace(-1.0, 1.0, len(y))
    return _least_squares(np.column_stack([t * t, t, np.ones_like(t)]), y)


def _hinge(y: FloatArray, knot: int) -> _Fit:
    """Two straight lines joined at bar ``knot``: the V a chartist draws through a sharp turn."""
    x = np.arange(len(y), dtype=float)
    return _least_squares(np.column_stack([np.ones_like(x), x, np.maximum(x - knot, 0.0)]), y)


def _line_through(y: FloatArray) -> _Fit:
    """Straight line through ``y`` against bar number; ``coef[1]`` is the slope per bar."""
    x = np.arange(len(y), dtype=float)
    return _least_squares(np.column_stack([np.ones_like(x), x]), y)


# --- Channel patterns ---------------------------------------------------------------------


class _Slope(StrEnum):
    """How one trendline of a channel pattern must run."""

    RISING = "rising"
    FLAT = "flat"
    FALLING = "falling"


class _Width(StrEnum):
    """How the gap between the two trendlines must evolve."""

    CONVERGING = "converging"
    PARALLEL = "parallel"
    DIVERGING = "diverging"


@dataclass(frozen=True)
class _ChannelShape:
    """A channel pattern as data: the run of each line, the width trend and the bias."""

    upper: _Slope
    lower: _Slope
    width: _Width
    bias: Bias


@dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class _Channel:
    """Least-squares lines through the swing highs and lows from ``start`` to the last bar."""

    bars: _Bars
    start: int
    highs: tuple[Pivot, ...]
    lows: tuple[Pivot, ...]

    @classmethod
    def fit(cls, bars: _Bars, start: int) -> _Channel | None:
        """The channel from bar ``start``, or None without two swings per line or if they cross."""
        highs, lows = bars.swings(PivotKind.HIGH, start), bars.swings(PivotKind.LOW, start)
        if len(highs) < 2 or len(lows) < 2:
            return None
        channel = cls(bars, start, tuple(highs), tuple(lows))
        return channel if min(channel.width_start, channel.width_end) > 0 else None

    @property
    def end(self) -> int:
        """The lines run to the last bar: a pattern is read up to now."""
        return self.bars.n - 1

    @cached_property
    def upper(self) -> FittedLine:
        """The line through the swing highs."""
        return fit_line(list(self.highs))

    @cached_property
    def lower(self) -> FittedLine:
        """The line through the swing lows."""
        return fit_line(list(self.lows))

    def width_at(self, index: int) -> float:
        """Gap between the lines at bar ``index``."""
        return float(self.upper.at(index) - self.lower.at(index))

    @property
    def width_start(self) -> float:
        """Gap between the lines at the first bar."""
        return self.width_at(self.start)

    @property
    def width_end(self) -> float:
        """Gap between the lines at the last bar."""
        return self.width_at(self.end)

    @property
    def height(self) -> float:
        """The pattern's height: its widest gap, the yardstick of all its proportions."""
        return max(self.width_start, self.width_end)

    @cached_property
    def quality(self) -> float:
        """How well the lines describe the bars, whatever their shape.

        Enough touches, touches close to their lines, bars between the lines and lines far
        enough apart to matter.
        """
        bars, height = self.bars, self.height
        residuals = [p.price - self.upper.at(p.index) for p in self.highs]
        residuals += [p.price - self.lower.at(p.index) for p in self.lows]
        rms = math.sqrt(float(np.mean(np.square(residuals))))
        covered = np.arange(self.start, max(p.index for p in self.highs + self.lows) + 1)
        slack = CHANNEL_TOLERANCE * height
        inside = (bars.high[covered] <= self.upper.at(covered) + slack) & (
            bars.low[covered] >= self.lower.at(covered) - slack
        )
        return math.prod(
            (
                _ramp(len(residuals), CHANNEL_TOUCHES),
                _ramp(rms / height, CHANNEL_RESIDUAL),
                _ramp(float(inside.mean()), CHANNEL_CONTAINMENT),
                _ramp(height / bars.atr, CHANNEL_HEIGHT_ATR),
            )
        )

    def change(self, line: FittedLine) -> float:
        """Rise of ``line`` over the span, in price."""
        return float(line.at(self.end) - line.at(self.start))

    def slope_score(self, line: FittedLine, slope: _Slope) -> float:
        """How well ``line`` runs as ``slope``, judged per pattern height (scale-free)."""
        change = self.change(line) / self.height
        if slope is _Slope.FLAT:
            return _ramp(abs(change), FLAT_CHANGE)
        return _ramp(change if slope is _Slope.RISING else -change, SLOPED_CHANGE)

    def width_score(self, width: _Width) -> float:
        """How well the width trend matches ``width``."""
        ratio = self.width_end / self.width_start
        if width is _Width.PARALLEL:
            return _ramp(abs(math.log(ratio)), PARALLEL_LOG_RATIO)
        return _ramp(ratio if width is _Width.CONVERGING else 1 / ratio, CONVERGING_RATIO)

    def describe(self) -> str:
        """The lines' moves, the width change and where the last close sits, in numbers."""
        bars, close = self.bars, self.bars.close[-1]
        if close > self.upper.at(self.end):
            where = f"{bars.pct(close - self.upper.at(self.end))} above the upper line"
        elif close < self.lower.at(self.end):
            where = f"{bars.pct(self.lower.at(self.end) - close)} below the lower line"
        else:
            where = "between the lines"
        return (
            f"Over bars {self.start}-{self.end} a line through {len(self.highs)} swing highs "
            f"{_moves(self.change(self.upper), bars)} and one through {len(self.lows)} swing "
            f"lows {_moves(self.change(self.lower), bars)}, so the gap between them goes from "
            f"{bars.pct(self.width_start)} to {bars.pct(self.width_end)} of price and the "
            f"last close is {where}."
        )


def _moves(change: float, bars: _Bars) -> str:
    """``rises 2.1%`` or ``falls 2.1%``."""
    return f"{'rises' if change >= 0 else 'falls'} {bars.pct(change)}"


def _versus(difference: float, bars: _Bars) -> str:
    """``2.1% above`` or ``2.1% below``."""
    return f"{bars.pct(difference)} {'above' if difference >= 0 else 'below'}"


def _channel_pattern(shape: _ChannelShape) -> _Detector:
    """A detector for one channel shape: the best-matching channel among all spans."""

    def detect(bars: _Bars) -> _Finding | None:
        return _best(
            _finding(
                shape.bias,
                (
                    channel.quality,
                    channel.slope_score(channel.upper, shape.upper),
                    channel.slope_score(channel.lower, shape.lower),
                    channel.width_score(shape.width),
                ),
                channel.start,
                channel.end,
                channel.describe,
            )
            for channel in bars.channels
        )

    return detect


# --- Double bottom and inverse head and shoulders ----------------------------------------


def _aftermath(bars: _Bars, last: Pivot, neck: float, floor: float) -> tuple[float, float]:
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
    retest = 1.0 if later_lows is None else _ramp((later_lows.min() - floor) / height, NO_RETEST)
    return _ramp(recovered, RECOVERY), retest


def _prior_decline(bars: _Bars, first: Pivot, height: float) -> float:
    """Score of the fall into the first low, per pattern height."""
    before = bars.high[: first.index]
    return _ramp((before.max() - first.price) / height, PRIOR_DECLINE)


def _double_bottom_at(bars: _Bars, first: Pivot, second: Pivot) -> _Finding | None:
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
        _ramp(height / bars.atr, REVERSAL_HEIGHT_ATR),
        _ramp(difference / height, BOTTOMS_SIMILAR),
        _ramp((second.index - first.index) / bars.n, BOTTOMS_SEPARATION),
        _ramp((inner.min() - floor) / height, DEEPER_LOW_BETWEEN),
        _prior_decline(bars, first, height),
        recovery,
        no_retest,
    )
    return _finding(
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


def _double_bottom(bars: _Bars) -> _Finding | None:
    """The best pair of swing lows forming a double bottom."""
    lows = bars.swings(PivotKind.LOW)
    return _best(
        _double_bottom_at(bars, first, second)
        for i, first in enumerate(lows)
        for second in lows[i + 1 :]
    )


def _head_and_shoulders_at(bars: _Bars, left: Pivot, head: Pivot, right: Pivot) -> _Finding | None:
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
        _ramp(height / bars.atr, REVERSAL_HEIGHT_ATR),
        _ramp((min(shoulders) - head.price) / height, HEAD_BELOW_SHOULDERS),
        _ramp(abs(left.price - right.price) / height, BOTTOMS_SIMILAR),
        _ramp((neck - max(shoulders)) / height, SHOULDERS_BELOW_NECK),
        _ramp(abs(peaks[0] - peaks[1]) / height, NECKLINE_TILT),
        _ramp(min(timing, 1 / timing), SHOULDER_TIMING),
        _prior_decline(bars, left, height),
        recovery,
        no_retest,
    )
    return _finding(
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


def _inverse_head_and_shoulders(bars: _Bars) -> _Finding | None:
    """The best triple of swing lows forming an inverse head and shoulders."""
    lows = bars.swings(PivotKind.LOW)
    return _best(
        _head_and_shoulders_at(bars, left, head, right)
        for i, left in enumerate(lows)
        for j, head in enumerate(lows[i + 1 :], start=i + 1)
        for right in lows[j + 1 :]
    )


# --- Curves: rounded bottom / top, V-shaped reversal --------------------------------------


def _rounded_from(view: _View, start: int) -> _Finding | None:
    """A bowl of closes from bar ``start`` to the last bar: curved, centred, deep, smooth."""
    bars, side = view.bars, view.side
    y = view.close[start:]
    curve = _quadratic(y)
    depth_coef, tilt, _ = curve.coef
    if depth_coef <= 0:
        return None
    vertex = -tilt / (2 * depth_coef)
    depth = depth_coef * (1 - min(abs(vertex), 1.0)) ** 2
    scores: tuple[float, ...] = (
        _ramp(abs(vertex), ROUNDED_VERTEX),
        _ramp(depth / bars.atr, ROUNDED_DEPTH_ATR),
        _ramp(curve.r2, ROUNDED_R2),
    )
    if math.prod(scores) == 0:
        return None  # skip the costly search for the best two-line fit
    vee = min(_hinge(y, knot).rms for knot in range(2, len(y) - 2))
    vee_ratio = vee / curve.rms if curve.rms > 0 else math.inf
    scores += (_ramp(vee_ratio, ROUNDED_VS_VEE),)
    vertex_bar = start + round((vertex + 1) / 2 * (len(y) - 1))
    return _finding(
        side.bias,
        scores,
        start,
        bars.n - 1,
        lambda: (
            f"A parabola through the closes of bars {start}-{bars.n - 1} (R² {curve.r2:.2f}) "
            f"has its {side.lowest} point at bar {vertex_bar}, {bars.pct(depth)} {side.below} "
            f"its shallower rim, and the best two straight legs leave {vee_ratio:.2f}x its "
            f"residual."
        ),
    )


def _rounded(view: _View) -> _Finding | None:
    """The best bowl over the candidate spans."""
    return _best(_rounded_from(view, int(share * view.bars.n)) for share in ROUNDED_STARTS)


def _v_reversal(view: _View) -> _Finding | None:
    """A sharp straight drop to a middle-late low and a sharp straight recovery of like size."""
    bars, side, close = view.bars, view.side, view.close
    low = int(close.argmin())
    top_before = int(close[: low + 1].argmax())
    top_after = low + int(close[low:].argmax())
    if low - top_before < 2 or top_after - low < 2:
        return None
    drop, rise = close[top_before] - close[low], close[top_after] - close[low]
    if drop <= 0 or rise <= 0:
        return None
    legs = close[top_before : top_after + 1]
    vee = _hinge(legs, low - top_before)
    curve = _quadratic(legs)
    vee_ratio = vee.rms / curve.rms if curve.rms > 0 else 1.0
    position = low / (bars.n - 1)
    scores = (
        _ramp(position, V_POSITION[0]),
        _ramp(position, V_POSITION[1]),
        _ramp(min(drop, rise) / bars.atr, V_LEG_ATR),
        _ramp(rise / drop, V_RECOVERY[0]),
        _ramp(rise / drop, V_RECOVERY[1]),
        _ramp(vee_ratio, V_VS_ROUNDED),
        _ramp(vee.r2, V_LEG_R2),
    )
    return _finding(
        side.bias,
        scores,
        top_before,
        top_after,
        lambda: (
            f"Closes {side.fell} {bars.pct(drop)} in {low - top_before} bars to bar {low} and "
            f"{side.rose} {bars.pct(rise)} in {top_after - low} bars to bar {top_after}, "
            f"recovering {rise / drop:.0%} of the {side.decline}; two straight legs fit them "
            f"with R² {vee.r2:.2f} and {vee_ratio:.2f}x the residual of a rounded curve."
        ),
    )


# --- Hidden base --------------------------------------------------------------------------


def _hidden_base_from(bars: _Bars, start: int) -> _Finding | None:
    """A long, narrow, calm, flat range from bar ``start`` to the end, after a decline."""
    base_high, base_low = bars.high[start:].max(), bars.low[start:].min()
    peak_index = int(bars.high[:start].argmax())
    decline = bars.high[peak_index] - base_low
    base_range = base_high - base_low
    if decline <= 0 or base_range <= 0:
        return None
    window_low, window_high = bars.low.min(), bars.high.max()
    middle = ((base_high + base_low) / 2 - window_low) / (window_high - window_low)
    calm = bars.ranges[start:].mean() / bars.ranges[:start].mean()
    drift = _line_through(bars.close[start:]).coef[1] * (bars.n - 1 - start)
    length = bars.n - start
    scores = (
        _ramp(length / bars.n, BASE_LENGTH),
        _ramp(base_range / decline, BASE_TIGHTNESS),
        _ramp(calm, BASE_CALM),
        _ramp(middle, BASE_NEAR_LOWS),
        _ramp(abs(drift) / base_range, BASE_DRIFT),
        _ramp(decline / bars.atr, BASE_DECLINE_ATR),
    )
    return _finding(
        Bias.BULLISH,
        scores,
        start,
        bars.n - 1,
        lambda: (
            f"After a {bars.pct(decline)} decline from the bar-{peak_index} high, bars "
            f"{start}-{bars.n - 1} ({length} bars) held a {bars.pct(base_range)} range "
            f"({base_range / decline:.0%} of the decline) centred {middle:.0%} of the way up "
            f"the window's range, with bar ranges {1 - calm:.0%} narrower than before."
        ),
    )


def _hidden_base(bars: _Bars) -> _Finding | None:
    """The best base over all start bars leaving a long enough base; longer wins ties."""
    latest = bars.n - math.ceil(BASE_MIN_SHARE * bars.n)
    starts = range(BASE_DECLINE_MIN_BARS, latest + 1)
    return _best(_hidden_base_from(bars, start) for start in starts)


# --- Flags --------------------------------------------------------------------------------


def _flag_after(view: _View, pole_end: int) -> _Finding | None:
    """A steep pole ending at bar ``pole_end`` and a tight, flat or counter-sloped flag after."""
    bars, side = view.bars, view.side
    unit = float(np.median(bars.ranges))
    first = max(0, pole_end - math.ceil(POLE_MAX_SHARE * bars.n))
    rises = view.high[pole_end] - view.low[first:pole_end]
    significance = rises / np.sqrt(np.arange(pole_end - first, 0, -1))
    pole_start = first + int(significance.argmax())
    pole = view.high[pole_end] - view.low[pole_start]
    if pole <= 0 or unit <= 0 or view.high[pole_start:pole_end].max() > view.high[pole_end]:
        return None  # no rise, or the pole's top came earlier and this bar is in the flag
    flag = slice(pole_end + 1, bars.n)
    length = bars.n - 1 - pole_end
    trend = _line_through(view.close[flag])
    drift = trend.coef[1] * (length - 1) / pole
    retrace = (view.high[pole_end] - view.low[flag].min()) / pole
    scores = (
        _ramp(pole / unit, POLE_SIZE),
        _ramp(significance.max() / unit, POLE_SIGNIFICANCE),
        _ramp(retrace, FLAG_RETRACE),
        _ramp((view.high[flag].max() - view.high[pole_end]) / pole, FLAG_OVERSHOOT),
        _ramp(trend.rms / pole, FLAG_TIGHTNESS),
        _ramp(drift, FLAG_WITH_POLE),
        _ramp(drift, FLAG_AGAINST_POLE),
    )
    return _finding(
        side.bias,
        scores,
        pole_start,
        bars.n - 1,
        lambda: (
            f"A {bars.pct(pole)} {side.rally} over {pole_end - pole_start} bars (bars "
            f"{pole_start}-{pole_end}, {pole / unit:.1f}x the median bar range) is followed by "
            f"a flag of {length} bars that gives back at most {retrace:.0%} of it, drifts "
            f"{abs(drift):.0%} of the pole {'against' if drift < 0 else 'with'} it and keeps "
            f"its closes within {trend.rms / pole:.0%} of the pole around that drift."
        ),
    )


def _flag(view: _View) -> _Finding | None:
    """The best pole/flag split with a flag of allowed length ending at the last bar."""
    n = view.bars.n
    longest = math.floor(FLAG_MAX_SHARE * n)
    return _best(_flag_after(view, n - 1 - length) for length in range(FLAG_MIN_BARS, longest + 1))


# --- Island reversal ----------------------------------------------------------------------


def _island(view: _View) -> _Finding | None:
    """Bars cut off by a gap from the bar on each side of them: the best such island."""
    bars, high, low = view.bars, view.high, view.low
    longest = max(1, math.floor(ISLAND_MAX_SHARE * bars.n))
    candidates: list[_Finding | None] = []
    for first in range(1, bars.n - 1):
        for after in range(first + 1, min(bars.n, first + longest + 1)):
            ceiling = high[first:after].max()
            left_gap, right_gap = low[first - 1] - ceiling, low[after] - ceiling
            if left_gap <= 0:
                break
            if right_gap > 0:
                candidates.append(_island_finding(view, first, after, left_gap, right_gap))
    return _best(candidates)


def _island_finding(
    view: _View, first: int, after: int, left_gap: float, right_gap: float
) -> _Finding | None:
    """Score and describe the island of bars ``first``..``after - 1``."""
    bars, side = view.bars, view.side
    return _finding(
        side.bias,
        (_ramp(min(left_gap, right_gap) / bars.atr, ISLAND_GAP_ATR),),
        first - 1,
        after,
        lambda: (
            f"A {bars.pct(left_gap)} {side.gap_down} into bar {first} and a "
            f"{bars.pct(right_gap)} {side.gap_up} at bar {after} leave bars {first}-{after - 1} "
            f"isolated {side.below} the bars on either side."
        ),
    )


# --- Table and entry point ----------------------------------------------------------------


def _one_side(detector: Callable[[_View], _Finding | None], side: _Side) -> _Detector:
    """A bars-level detector running a bottom-oriented detector from one side."""
    return lambda bars: detector(_View.of(bars, side))


def _either_side(detector: Callable[[_View], _Finding | None]) -> _Detector:
    """A bars-level detector keeping the better of the bottom and the top reading."""
    return lambda bars: _best(detector(_View.of(bars, side)) for side in (_BOTTOM, _TOP))


_DETECTORS: dict[PatternName, _Detector] = {
    PatternName.INVERSE_HEAD_AND_SHOULDERS: _inverse_head_and_shoulders,
    PatternName.DOUBLE_BOTTOM: _double_bottom,
    PatternName.ROUNDED_BOTTOM: _one_side(_rounded, _BOTTOM),
    PatternName.HIDDEN_BASE: _hidden_base,
    PatternName.FALLING_WEDGE: _channel_pattern(
        _ChannelShape(_Slope.FALLING, _Slope.FALLING, _Width.CONVERGING, Bias.BULLISH)
    ),
    PatternName.RISING_WEDGE: _channel_pattern(
        _ChannelShape(_Slope.RISING, _Slope.RISING, _Width.CONVERGING, Bias.BEARISH)
    ),
    PatternName.ASCENDING_TRIANGLE: _channel_pattern(
        _ChannelShape(_Slope.FLAT, _Slope.RISING, _Width.CONVERGING, Bias.BULLISH)
    ),
    PatternName.DESCENDING_TRIANGLE: _channel_pattern(
        _ChannelShape(_Slope.FALLING, _Slope.FLAT, _Width.CONVERGING, Bias.BEARISH)
    ),
    PatternName.BULLISH_FLAG: _one_side(_flag, _BOTTOM),
    PatternName.BEARISH_FLAG: _one_side(_flag, _TOP),
    PatternName.RECTANGLE: _channel_pattern(
        _ChannelShape(_Slope.FLAT, _Slope.FLAT, _Width.PARALLEL, Bias.NEUTRAL)
    ),
    PatternName.ISLAND_REVERSAL: _either_side(_island),
    PatternName.V_SHAPED_REVERSAL: _either_side(_v_reversal),
    PatternName.ROUNDED_TOP: _one_side(_rounded, _TOP),
    PatternName.EXPANDING_TRIANGLE: _channel_pattern(
        _ChannelShape(_Slope.RISING, _Slope.FALLING, _Width.DIVERGING, Bias.NEUTRAL)
    ),
    PatternName.SYMMETRICAL_TRIANGLE: _channel_pattern(
        _ChannelShape(_Slope.FALLING, _Slope.RISING, _Width.CONVERGING, Bias.NEUTRAL)
    ),
}
"""Pattern -> detector. Bottom-side detectors read tops through a mirrored ``_View``."""


def _series(field: str, values: Sequence[float] | FloatArray) -> FloatArray:
    """One price series as a 1-D float array of finite positive numbers, or ``InvalidInput``."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(field, f"is not a sequence of numbers ({exc})") from None
    if array.ndim != 1:
        raise InvalidInput(field, f"must be one-dimensional, got shape {array.shape}")
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
) -> _Bars:
    """Validate the four series and the pivot settings into one ``_Bars``."""
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
    return _Bars(series["high"], series["low"], series["close"], order, pivot_prominence)


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
    for name, detector in _DETECTORS.items():
        finding = detector(bars)
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
