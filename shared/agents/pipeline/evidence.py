"""The offline agents' common reasoning: facts as weighted votes, bands, and number words.

Each offline analyst turns what its tools returned into ``Evidence`` (a vote from -1
bearish to +1 bullish, a weight, and the sentence with the number it rests on); the
debaters and managers weigh the reports' stances with the same votes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from shared.agents.pipeline.schemas import (
    Action,
)
from shared.agents.schemas import Stance

T = TypeVar("T")
Bands = Sequence[tuple[float, T]]
"""(upper bound, value) rows, ascending: a number takes the value of the first bound above it."""


def banded(value: float, bands: Bands[T]) -> T:
    """The value of the first band whose upper bound exceeds ``value`` (the last band is open)."""
    return next((row for bound, row in bands if value < bound), bands[-1][1])


@dataclass(frozen=True)
class Evidence:
    """One fact and its vote: -1 bearish to +1 bullish; weight 0 informs without voting."""

    vote: float
    weight: float
    point: str

    @property
    def leans(self) -> Stance:
        """The way the fact points alone."""
        return STANCE_OF_SIGN[sign_of(self.vote)]


INF = float("inf")
MAX_POINTS = 8
STANCE_BANDS: Bands[Stance] = (
    (-0.15, Stance.BEARISH),
    (0.15, Stance.NEUTRAL),
    (INF, Stance.BULLISH),
)
VOTE_OF_STANCE: dict[Stance, int] = {Stance.BULLISH: 1, Stance.BEARISH: -1, Stance.NEUTRAL: 0}
STANCE_OF_SIGN: dict[float, Stance] = {float(v): stance for stance, v in VOTE_OF_STANCE.items()}
ACTION_SIGN: dict[Action, int] = {Action.BUY: 1, Action.HOLD: 0, Action.SELL: -1}


AMOUNT_UNITS = (("B", 1e9), ("M", 1e6), ("K", 1e3))


def amount(value: float) -> str:
    """A money amount the way a report writes it: 1.23B, 45.60M, 789."""
    scale = next(((unit, size) for unit, size in AMOUNT_UNITS if abs(value) >= size), None)
    return f"{value / scale[1]:.2f}{scale[0]}" if scale else f"{value:.4g}"


def sign_of(value: float) -> float:
    """+1 for a positive number, -1 for a negative one, 0 for zero."""
    return float((value > 0) - (value < 0))


def counted(count: int, noun: str) -> str:
    """``count`` of ``noun``, plural when it is not one: "1 article", "3 articles"."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def signed(value: float) -> str:
    """A change as a signed percentage: +4.2%."""
    return f"{value:+.1%}"


def weighted_vote(evidence: Sequence[Evidence]) -> float:
    """The weighted mean vote in [-1, 1]; 0 when nothing voted."""
    total = sum(e.weight for e in evidence)
    return sum(e.vote * e.weight for e in evidence) / total if total else 0.0
