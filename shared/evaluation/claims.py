"""What an evaluation can claim beyond its accuracy table: the records (no numerical library,
so the workflow may import them); ``shared.evaluation.measure`` fills them.

- ``tests``: the direction tests (``shared.stats.direction``) of every window, of those
  after the training cutoff and of those before it;
- ``agent`` and ``buy_and_hold``: the leaderboard columns of trading each call over its
  held-out bars, and of always going long on the same windows;
- ``spread``: with repeats, how far the repeats of one window disagree.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from shared.stats.results import DirectionTests, Leaderboard


class RepeatSpread(BaseModel):
    """How much the repeats of the same windows differ; each window still counts once."""

    repeats: int = Field(ge=2, description="runs of each window")
    accuracies: list[float | None] = Field(
        description="accuracy of each repeat alone, over the windows it answered"
    )
    unanimous: float | None = Field(
        description="share of windows whose answered repeats all made the same call"
    )

    @property
    def low(self) -> float | None:
        """The worst repeat's accuracy."""
        known = [a for a in self.accuracies if a is not None]
        return min(known) if known else None

    @property
    def high(self) -> float | None:
        """The best repeat's accuracy."""
        known = [a for a in self.accuracies if a is not None]
        return max(known) if known else None


class EvaluationClaims(BaseModel):
    """The statistics of an evaluation beyond accuracy and its Wilson interval."""

    tests: dict[str, DirectionTests] = Field(
        description="'overall', 'after cutoff', 'before cutoff', 'unknown' -> its tests"
    )
    agent: Leaderboard = Field(description="each call traded over its held-out bars")
    buy_and_hold: Leaderboard = Field(description="always long on the same windows")
    spread: RepeatSpread | None = None
