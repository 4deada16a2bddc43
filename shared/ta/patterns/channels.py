"""Channel patterns: wedges, triangles, the rectangle and the expanding triangle.

Each is a pair of trendlines through the swing highs and lows from an early swing to the
last bar, told apart by how each line runs and how the gap between them evolves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

import numpy as np

from shared.ta.patterns.geometry import Bars, Bounds, Finding, best, finding, ramp
from shared.ta.patterns.model import Bias, PatternName
from shared.ta.pivots import FittedLine, Pivot, PivotKind, fit_line

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


class Slope(StrEnum):
    """How one trendline of a channel pattern must run."""

    RISING = "rising"
    FLAT = "flat"
    FALLING = "falling"


class Width(StrEnum):
    """How the gap between the two trendlines must evolve."""

    CONVERGING = "converging"
    PARALLEL = "parallel"
    DIVERGING = "diverging"


@dataclass(frozen=True)
class ChannelShape:
    """A channel pattern as data: the run of each line, the width trend and the bias."""

    upper: Slope
    lower: Slope
    width: Width
    bias: Bias


@dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class Channel:
    """Least-squares lines through the swing highs and lows from ``start`` to the last bar."""

    bars: Bars
    start: int
    highs: tuple[Pivot, ...]
    lows: tuple[Pivot, ...]

    @classmethod
    def fit(cls, bars: Bars, start: int) -> Channel | None:
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
                ramp(len(residuals), CHANNEL_TOUCHES),
                ramp(rms / height, CHANNEL_RESIDUAL),
                ramp(float(inside.mean()), CHANNEL_CONTAINMENT),
                ramp(height / bars.atr, CHANNEL_HEIGHT_ATR),
            )
        )

    def change(self, line: FittedLine) -> float:
        """Rise of ``line`` over the span, in price."""
        return float(line.at(self.end) - line.at(self.start))

    def slope_score(self, line: FittedLine, slope: Slope) -> float:
        """How well ``line`` runs as ``slope``, judged per pattern height (scale-free)."""
        change = self.change(line) / self.height
        if slope is Slope.FLAT:
            return ramp(abs(change), FLAT_CHANGE)
        return ramp(change if slope is Slope.RISING else -change, SLOPED_CHANGE)

    def width_score(self, width: Width) -> float:
        """How well the width trend matches ``width``."""
        ratio = self.width_end / self.width_start
        if width is Width.PARALLEL:
            return ramp(abs(math.log(ratio)), PARALLEL_LOG_RATIO)
        return ramp(ratio if width is Width.CONVERGING else 1 / ratio, CONVERGING_RATIO)

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


def _moves(change: float, bars: Bars) -> str:
    """``rises 2.1%`` or ``falls 2.1%``."""
    return f"{'rises' if change >= 0 else 'falls'} {bars.pct(change)}"


def fit_channels(bars: Bars) -> tuple[Channel, ...]:
    """Trendline pairs from each early-enough swing to the last bar, longest first."""
    latest_start = bars.n - math.ceil(CHANNEL_MIN_SPAN * bars.n)
    starts = sorted({p.index for p in bars.pivots if p.index <= latest_start})
    fitted = (Channel.fit(bars, start) for start in starts)
    return tuple(channel for channel in fitted if channel is not None)


SHAPES: dict[PatternName, ChannelShape] = {
    PatternName.FALLING_WEDGE: ChannelShape(
        Slope.FALLING, Slope.FALLING, Width.CONVERGING, Bias.BULLISH
    ),
    PatternName.RISING_WEDGE: ChannelShape(
        Slope.RISING, Slope.RISING, Width.CONVERGING, Bias.BEARISH
    ),
    PatternName.ASCENDING_TRIANGLE: ChannelShape(
        Slope.FLAT, Slope.RISING, Width.CONVERGING, Bias.BULLISH
    ),
    PatternName.DESCENDING_TRIANGLE: ChannelShape(
        Slope.FALLING, Slope.FLAT, Width.CONVERGING, Bias.BEARISH
    ),
    PatternName.RECTANGLE: ChannelShape(Slope.FLAT, Slope.FLAT, Width.PARALLEL, Bias.NEUTRAL),
    PatternName.EXPANDING_TRIANGLE: ChannelShape(
        Slope.RISING, Slope.FALLING, Width.DIVERGING, Bias.NEUTRAL
    ),
    PatternName.SYMMETRICAL_TRIANGLE: ChannelShape(
        Slope.FALLING, Slope.RISING, Width.CONVERGING, Bias.NEUTRAL
    ),
}
"""Each channel pattern as data: how its two lines run, how their gap evolves, its bias."""


def _reading(channel: Channel, shape: ChannelShape) -> Finding | None:
    """``channel`` read as ``shape``: its quality times how well its lines and gap match."""
    scores = (
        channel.quality,
        channel.slope_score(channel.upper, shape.upper),
        channel.slope_score(channel.lower, shape.lower),
        channel.width_score(shape.width),
    )
    return finding(shape.bias, scores, channel.start, channel.end, channel.describe)


def channel_patterns(bars: Bars) -> dict[PatternName, Finding | None]:
    """The best reading of each channel pattern among all the channels of ``bars``, which
    are fitted once for all seven."""
    channels = fit_channels(bars)
    return {
        name: best(_reading(channel, shape) for channel in channels)
        for name, shape in SHAPES.items()
    }
