"""What every pattern detector shares: soft thresholds, one window's measured bars, the
mirrored view that lets a bottom detector read tops, and the least-squares fits of closes."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from shared.ta.patterns.model import Bias
from shared.ta.pivots import FloatArray, Pivot, PivotKind, find_pivots, true_ranges

Bounds = tuple[float, float]
"""``(zero, one)`` of a soft threshold: the score is 0 at ``zero`` and 1 at ``one``."""


@dataclass(frozen=True)
class Finding:
    """A detector's answer before it is named: bias, score, span and evidence."""

    bias: Bias
    confidence: float
    start: int
    end: int
    description: str


@dataclass(frozen=True)
class Side:
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


BOTTOM = Side(
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
TOP = Side(
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
class Fit:
    """A least-squares fit of closes: coefficients, residual RMS and R²."""

    coef: FloatArray
    rms: float
    r2: float


@dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class Bars:
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

    def swings(self, kind: PivotKind, start: int = 0) -> list[Pivot]:
        """The pivots of one kind at or after bar ``start``."""
        return [p for p in self.pivots if p.kind is kind and p.index >= start]

    def pct(self, distance: float) -> str:
        """A price distance as a percentage of the mean price, e.g. ``4.2%``."""
        return f"{100 * abs(distance) / self.level:.1f}%"


@dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class View:
    """The bars seen from one side: a top is a bottom of the negated prices.

    Negating prices turns highs into lows, so the top-side high is minus the low. Detectors
    written for bottoms then find tops unchanged; distances keep their size, so ``bars.pct``
    still quotes them against the real mean price.
    """

    bars: Bars
    side: Side
    high: FloatArray
    low: FloatArray
    close: FloatArray

    @classmethod
    def of(cls, bars: Bars, side: Side) -> View:
        """The view of ``bars`` from ``side``."""
        if side.sign > 0:
            return cls(bars, side, bars.high, bars.low, bars.close)
        return cls(bars, side, -bars.low, -bars.high, -bars.close)


Detector = Callable[[Bars], Finding | None]


def ramp(value: float, bounds: Bounds) -> float:
    """A soft threshold: 0 at ``bounds[0]``, 1 at ``bounds[1]``, linear between, clipped.

    Soft rather than hard so a shape just past a textbook limit loses confidence gradually
    instead of vanishing; bounds may run downwards for "smaller is better".
    """
    zero, one = bounds
    return float(np.clip((value - zero) / (one - zero), 0.0, 1.0))


def finding(
    bias: Bias, scores: Iterable[float], start: int, end: int, describe: Callable[[], str]
) -> Finding | None:
    """A finding whose confidence is the product of ``scores``, or None if any score is 0.

    The product makes every criterion necessary; ``describe`` is only called for survivors.
    """
    confidence = math.prod(scores)
    if confidence <= 0:
        return None
    return Finding(bias, confidence, start, end, describe())


def best(findings: Iterable[Finding | None]) -> Finding | None:
    """The most confident finding; the first one wins ties (longest span, earliest side)."""
    best: Finding | None = None
    for finding in findings:
        if finding is not None and (best is None or finding.confidence > best.confidence):
            best = finding
    return best


def least_squares(design: FloatArray, y: FloatArray) -> Fit:
    """Least-squares fit of ``y`` on the columns of ``design``, with its RMS and R²."""
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    spread = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual**2).sum()) / spread if spread > 0 else 0.0
    return Fit(coef=np.asarray(coef, dtype=float), rms=float(np.sqrt((residual**2).mean())), r2=r2)


def quadratic(y: FloatArray) -> Fit:
    """Parabola ``a t² + b t + c`` over ``t`` in [-1, 1], so ``a`` is the rim-to-vertex height."""
    t = np.linspace(-1.0, 1.0, len(y))
    return least_squares(np.column_stack([t * t, t, np.ones_like(t)]), y)


def hinge(y: FloatArray, knot: int) -> Fit:
    """Two straight lines joined at bar ``knot``: the V a chartist draws through a sharp turn."""
    x = np.arange(len(y), dtype=float)
    return least_squares(np.column_stack([np.ones_like(x), x, np.maximum(x - knot, 0.0)]), y)


def line_through(y: FloatArray) -> Fit:
    """Straight line through ``y`` against bar number; ``coef[1]`` is the slope per bar."""
    x = np.arange(len(y), dtype=float)
    return least_squares(np.column_stack([np.ones_like(x), x]), y)


def one_side(detector: Callable[[View], Finding | None], side: Side) -> Detector:
    """A bars-level detector running a bottom-oriented detector from one side."""
    return lambda bars: detector(View.of(bars, side))


def either_side(detector: Callable[[View], Finding | None]) -> Detector:
    """A bars-level detector keeping the better of the bottom and the top reading."""
    return lambda bars: best(detector(View.of(bars, side)) for side in (BOTTOM, TOP))
